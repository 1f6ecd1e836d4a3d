"""Saved activations are references; a saved value is copied only before a write to it.

Saving is the common case and writes are rare, so saving only appends to a list: which
storage each saved tensor lives in is looked up on the first write of the trace, and
from then on as new values are saved. A model without in-place writes never pays for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from itertools import compress
from operator import ne
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from lens_widget.log.records import OpRecord

Tensor = torch.Tensor
Parameter = torch.nn.Parameter
SavedEntry = tuple["OpRecord", tuple[Tensor, ...], "int | tuple[int, ...]"]


def storage_key(tensor: Tensor) -> int | None:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse / meta tensors have no storage
        return None


def detach_sources(nodes: list[OpRecord]) -> None:
    """The parameters keep_source left undetached on `nodes`, detached (as every saved value
    is): run when the records are filled, before anything reads a value."""
    for node in nodes:
        saved = node.activations
        if saved is not None and type(saved[0]) is Parameter:  # (not a copy made since)
            node.activations = (saved[0].detach(),)


class SavedValues:
    """Versions of tensors, the saved references, and copies before writes.

    Every method here must run with torch functions disabled (the recorder's bookkeeping),
    so a user's mode or Tensor subclass sees none of these calls.
    """

    def __init__(self, track_versions: bool) -> None:
        self.track_versions = track_versions
        # (node, the outputs as saved, their versions then): by reference, not yet copied.
        # Ops and inputs, checked for unseen writes at the end (overwritten_unseen)...
        self.saved: list[SavedEntry] = []
        # ...and parameters, buffers and constants, which are never reported: not checked.
        self.unreported: list[SavedEntry] = []
        self._n_indexed = [0, 0]  # of each list, indexed by storage so far
        # storage pointer -> [(node, output index)] of saved tensors that share it
        self._by_storage: dict[int, list[tuple[OpRecord, int]]] = {}
        # storage pointer -> writes seen, for tensors without a version counter
        self._storage_writes: dict[int, int] = {}
        # Called before a write with its targets (an offload writes pending values first)
        self.write_guard: Callable[[list[Tensor]], None] | None = None
        # Values written to disk after a write no call showed had changed them
        self._changed_before_moved: list[OpRecord] = []
        # False: the values of parameters, buffers and constants are not copied before a
        # write (an optimizer step writes every parameter); one written since it was kept is
        # dropped when the log is built (drop_written_sources), so no log shows a value the
        # source did not have. lw.Monitor's choice when nothing reads them after the step.
        self.copy_sources = True
        # Source nodes keeping a parameter itself, detached when the records are filled
        # (detach_sources)
        self.undetached: list[OpRecord] = []

    def version(self, tensor: Tensor) -> int:
        """The tensor's write counter (>= 0), or where torch keeps none (inference tensors)
        a negative count of the writes this trace saw to its storage."""
        if self.track_versions:
            try:
                return tensor._version
            except RuntimeError:
                pass
        storage = storage_key(tensor)
        return -1 - self._storage_writes.get(storage, 0) if storage is not None else -1

    def keep(
        self, node: OpRecord, outputs: tuple[Tensor, ...], versions: int | tuple[int, ...]
    ) -> None:
        # Saved values are plain tensors without autograd history (a detached view shares
        # storage: no copy); a Parameter output (p.float() returns p) becomes one too.
        for t in outputs:
            if t.requires_grad or type(t) is Parameter:
                # A tensor wrapped by vmap(grad(...)) refuses detach: it is dropped right
                # after, as every value in a torch.func transform (note_transform_outputs).
                with contextlib.suppress(RuntimeError):
                    outputs = tuple([t.detach() for t in outputs])
                break
        node.activations = outputs
        self.saved.append((node, outputs, versions))

    def keep_source(
        self, node: OpRecord, tensor: Tensor, version: int, reported: bool, later: bool
    ) -> None:
        """A source's value; `reported`: an unseen write to it is worth a warning (an
        input's, not a parameter's: those are the user's business). `later`: nothing reads
        the value before the records are filled, so a parameter is detached then
        (`detach_sources`): a leaf holds no graph, and the detached tensor would share its
        memory and version counter, so it reads the same; ResNet-50 keeps 266 a trace."""
        if tensor.requires_grad or type(tensor) is Parameter:
            if later and type(tensor) is Parameter:
                self.undetached.append(node)
            else:
                tensor = tensor.detach()  # as keep() does
        outputs = node.activations = (tensor,)
        (self.saved if reported else self.unreported).append((node, outputs, version))

    def _index_new(self) -> None:
        # Runs before every recorded write (a training step's batch norms write their
        # running stats: ~1 per op, each after a few values were saved): storage_key
        # inlined, and a list not walked when nothing was added to it since.
        by_storage, n_indexed = self._by_storage, self._n_indexed
        guarded = (self.saved, self.unreported) if self.copy_sources else (self.saved,)
        for which, entries in enumerate(guarded):
            start = n_indexed[which]
            if start == len(entries):
                continue
            n_indexed[which] = len(entries)
            for k in range(start, len(entries)):
                node, outputs, _ = entries[k]
                for i, tensor in enumerate(outputs):
                    try:
                        storage = tensor.untyped_storage().data_ptr()
                    except (RuntimeError, NotImplementedError):  # sparse / meta: no storage
                        continue
                    by_storage.setdefault(storage, []).append((node, i))

    def locate(self, node: OpRecord) -> tuple[list[SavedEntry], int] | None:
        """Where `node`'s entry is, right after it was kept (it is the last of its list)."""
        for entries in (self.saved, self.unreported):
            if entries and entries[-1][0] is node:
                return entries, len(entries) - 1
        return None

    def replaced(self, where: tuple[list[SavedEntry], int], index: int, tensor: Tensor) -> None:
        """Saved output `index` of the entry at `where`, `tensor`, now has a copy elsewhere
        (on disk): the reference is dropped; a write no call showed since it was saved is
        reported (for an op's or an input's value)."""
        entries, k = where
        node, _, versions = entries[k]
        multi = type(versions) is not int
        then: int = versions[index] if multi else versions  # pyright: ignore[reportIndexIssue]  # a tuple when not an int
        if then >= 0 and entries is self.saved and self.version(tensor) != then:
            self._changed_before_moved.append(node)
        # -1: not checked at the end (the value on disk is the one that counts)
        versions = (*versions[:index], -1, *versions[index + 1 :]) if multi else -1  # pyright: ignore[reportIndexIssue]  # a tuple when not an int
        entries[k] = (node, node.activations or (), versions)

    def dropped(self, where: tuple[list[SavedEntry], int]) -> None:
        """The entry's values are gone (an offload that failed): nothing to check."""
        entries, k = where
        entries[k] = (entries[k][0], (), -1)

    def before_write(self, targets: list[Tensor]) -> None:
        """Count the write; saved tensors sharing storage with a target get copied first."""
        if self.write_guard is not None:
            self.write_guard(targets)
        self._index_new()
        for target in targets:
            storage = storage_key(target)
            if storage is None:
                continue
            self._storage_writes[storage] = self._storage_writes.get(storage, 0) + 1
            copies: dict[int, Tensor] = {}  # nodes saving the same tensor share one copy
            for node, i in self._by_storage.pop(storage, ()):
                saved = node.activations
                if saved is None or storage_key(saved[i]) != storage:
                    continue  # gone, or replaced since (by a copy, or by a value on disk)
                copy = copies.get(id(saved[i]))
                if copy is None:  # (a detached tensor's clone records no autograd node)
                    copy = copies[id(saved[i])] = saved[i].detach().clone()
                node.activations = (*saved[:i], copy, *saved[i + 1 :])

    def drop_written_sources(self) -> None:
        """Without copy_sources: parameters, buffers and constants written since their value
        was kept keep no value (the reference now holds another)."""
        if self.copy_sources:
            return
        entries = self.unreported
        for k, (node, outputs, version) in enumerate(entries):
            if outputs and node.activations is outputs and self.version(outputs[0]) != version:
                node.activations = None
                entries[k] = (node, (), -1)

    def overwritten_unseen(self) -> list[OpRecord]:
        """Ops and inputs whose saved reference (not replaced by a copy) changed version
        since saved: written by a call the tracer could not see."""
        saved = self.saved
        if self.track_versions:
            # Most entries are one output whose version did not move: those are ruled out
            # with comprehensions and C loops; the rest are checked one by one below.
            try:
                now = [outputs[0]._version if outputs else -1 for _, outputs, _ in saved]
            except RuntimeError:  # an inference tensor: check every entry
                pass
            else:
                saved = list(compress(saved, map(ne, now, [v for _, _, v in saved])))
        changed = list(self._changed_before_moved)
        for node, outputs, versions in saved:
            now_saved = node.activations
            if now_saved is None:
                continue
            if type(versions) is int:
                versions = (versions,)
            for i, then in enumerate(versions):  # pyright: ignore[reportArgumentType]  # an int was made a tuple just above
                tensor = outputs[i]
                if then >= 0 and now_saved[i] is tensor and self.version(tensor) != then:
                    changed.append(node)
                    break
        return changed
