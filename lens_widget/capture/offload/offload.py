"""Saved values past a memory budget go to disk while the pass runs (``offload=path``).

A Feature (features.py): each value the book keeps (`outputs_noted`, `source_added`) is
kept in memory while the values kept so far fit the budget, and otherwise handed, as its
whole storage, to a writer thread (shard_writer.py) that writes safetensors shards under
the offload directory. Once a shard is written, the recorder's thread puts views of the
mapped file in place of the values (`_take_written`), so the memory goes back as soon as
the model lets go of it. Each storage is written once, however many saved views share it.

Guarantees kept: a value on disk is the value as it was produced. An in-place write that
reaches a storage still waiting to be written waits for it first (`_before_write`, called
by SavedValues); one that comes later changes memory the log no longer reads. A write no
call showed (which would have changed a value still in memory) is reported as in memory.
The model's own parameters and buffers stay references (the model holds them anyway).
"""

from __future__ import annotations

import errno
import os
import re
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from lens_widget.capture.features import Feature
from lens_widget.capture.offload.shard_writer import ShardWriter
from lens_widget.capture.saved_values import SavedValues
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.disk_values import DiskValues
from lens_widget.log.records import OpRecord

Tensor = torch.Tensor
# A storage's decision: kept in memory, dropped (the writer failed: the budget holds), or
# else its entry name in the writer
_MEMORY = ""
_DROPPED = "-"
# dtypes written as themselves (safetensors then aligns the mapped entries for them)
_TYPED = frozenset({
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool,
})  # fmt: skip


class OffloadError(OSError):
    """Saved values could not be written to the offload directory (its path is named)."""


@dataclass(frozen=True)
class OffloadSpec:
    """Where saved values go and how many bytes of them stay in memory; the writer's sizes
    (a shard is written once `shard_bytes` wait; the pass waits while `pending_limit` do)."""

    directory: Path
    keep_in_memory: int = 0  # bytes of saved values kept in memory
    shard_bytes: int = 32 << 20
    pending_limit: int = 64 << 20

    @classmethod
    def within(cls, directory: Path, budget: int) -> OffloadSpec:
        """Values waiting to be written count in the budget: a quarter of it (4 MiB to
        64 MiB) may wait, the rest holds values kept in memory. Budget 0: nothing is kept
        in memory, and up to 64 MiB wait."""
        if budget == 0:
            return cls(directory)
        pending = min(64 << 20, max(4 << 20, budget // 4))
        return cls(directory, max(0, budget - pending), pending // 2, pending)


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}  # fmt: skip


def parse_budget(budget: int | str) -> int:
    """Bytes from an int or a size such as "2GB", "512 MiB", "1.5gb"."""
    if isinstance(budget, bool) or not isinstance(budget, (int, str)):
        raise TypeError(
            f'memory_budget must be bytes (an int) or a size like "2GB", got {budget!r}'
        )
    if isinstance(budget, int):
        value = budget
    else:
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", budget)
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(
                f'memory_budget={budget!r}: use bytes or a size like "2GB", "512MB", "1.5GiB"'
            )
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < 0:
        raise ValueError(f"memory_budget must be >= 0 bytes, got {budget!r}")
    return value


def offload_spec(
    offload: str | os.PathLike[str] | None, memory_budget: int | str | None
) -> OffloadSpec | None:
    """The trace's offload from its keywords (checked, and the directory made writable,
    before anything runs); None without ``offload``."""
    if offload is None:
        if memory_budget is not None:
            raise ValueError(
                "memory_budget needs offload=path: the values past the budget are written there"
            )
        return None
    if not isinstance(offload, (str, os.PathLike)):
        raise TypeError(f"offload must be a directory path, got {type(offload).__name__}")
    directory = Path(offload)
    budget = 0 if memory_budget is None else parse_budget(memory_budget)
    check_writable(directory)
    return OffloadSpec.within(directory, budget)


def check_writable(directory: Path) -> None:
    """Make `directory` and check a file can be written there, before anything runs."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".lens_widget-probe-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise OffloadError(
            err.errno or errno.EIO, f"offload={str(directory)!r} cannot be written: {reason}"
        ) from None


class Offload(Feature):
    """Keeps saved values within `budget` bytes of memory; the rest goes to `directory`."""

    def __init__(self, book: TensorBook, spec: OffloadSpec, model_tensors: set[int]) -> None:
        self.directory = directory = spec.directory
        self.budget = spec.keep_in_memory
        self.in_memory = 0  # bytes of the storages kept in memory
        self._model_tensors = model_tensors  # ids of the model's parameters and buffers
        # Weak: the values hold this feature's write guard (a cycle would keep them alive)
        self._values = cast("SavedValues", weakref.proxy(book.values))
        self._writer = ShardWriter(
            directory, shard_bytes=spec.shard_bytes, pending_limit=spec.pending_limit
        )
        self.disk = DiskValues(directory)
        # storage pointer -> (weak reference to it, _MEMORY or its entry name); a pointer
        # whose storage is gone may be another storage's now (the reference says so).
        self._decided: dict[int, tuple[StorageWeakRef, str]] = {}
        # entry name -> [(the value, what takes its view on disk)] waiting for the shard...
        self._waiting: dict[str, list[tuple[Tensor, OnDisk]]] = {}
        # ...and its mapped bytes once written (a later view of the same storage reads them)
        self._mapped: dict[str, Tensor] = {}
        book.values.write_guard = self._before_write

    # ---- hooks -------------------------------------------------------------------------

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        if node.activations is not None:
            self._place(node)

    def source_added(self, tensor: Tensor, node: OpRecord) -> None:
        if node.activations is not None and id(tensor) not in self._model_tensors:
            self._place(node)

    # ---- the values --------------------------------------------------------------------

    def _place(self, node: OpRecord) -> None:
        """`node`'s saved outputs, each in memory or (once written) a view of its shard."""
        where = self._values.locate(node)
        saved = node.activations
        if where is None or saved is None:
            return
        for i, tensor in enumerate(saved):
            self.put(tensor, _ActivationOnDisk(self._values, node, i, tensor, where))

    def put(self, tensor: Tensor, on_disk: OnDisk) -> None:
        """Keep `tensor` in memory if it fits the budget; else write it, and `on_disk` gets
        its view on the mapped shard once written (on this thread)."""
        if self._writer.written:
            self._take_written()
        if tensor.layout != torch.strided or tensor.device.type == "meta":
            return  # sparse and meta values stay as they are
        with torch._C.DisableTorchFunction():
            storage = tensor.untyped_storage()
            key = storage.data_ptr()
            known = self._decided.get(key)
            if known is None or known[0].expired():
                decision = self._decide(storage, tensor, key)
                self._decided[key] = (StorageWeakRef(storage), decision)
            else:
                decision = known[1]
            if decision == _MEMORY:
                return
            if decision == _DROPPED:
                on_disk(None)
                return
            mapped = self._mapped.get(decision)
            if mapped is None:
                self._waiting.setdefault(decision, []).append((tensor, on_disk))
            else:
                on_disk(_view_on(mapped, tensor))

    def put_item(self, holder: dict[Any, Tensor], key: Any) -> None:
        """`holder[key]` (a gradient of a traced backward) as `put` keeps it."""
        tensor = holder[key]
        self.put(tensor, _ItemOnDisk(holder, key, tensor))

    def _decide(self, storage: torch.UntypedStorage, tensor: Tensor, key: int) -> str:
        nbytes = storage.nbytes()
        if self.in_memory + nbytes <= self.budget:
            self.in_memory += nbytes
            return _MEMORY
        flat = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage)
        dtype = tensor.dtype
        if dtype in _TYPED and nbytes % dtype.itemsize == 0 and dtype != torch.uint8:
            flat = flat.view(dtype)
        event = None
        if flat.device.type == "cuda":
            # Pinned host memory, copied without blocking; the writer waits for the event.
            host = torch.empty(flat.shape, dtype=flat.dtype, pin_memory=True)
            host.copy_(flat, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            flat = host
        elif flat.device.type != "cpu":
            flat = flat.cpu()
        name = self._writer.put(flat, key, event)
        return _DROPPED if name is None else name  # the writer failed: reported at the end

    def _before_write(self, targets: list[Tensor]) -> None:
        """An in-place write is about to reach `targets`: storages among them still waiting
        to be written are written first."""
        keys = set()
        for target in targets:
            try:
                keys.add(target.untyped_storage().data_ptr())
            except (RuntimeError, NotImplementedError):
                continue
        self._writer.wait_for(keys)
        self._take_written()
        for key in keys:  # the storage will hold new values: a value saved later is new
            self._decided.pop(key, None)

    def _take_written(self) -> None:
        """Views of the mapped shards in place of the values written so far."""
        written, waiting, disk = self._writer.written, self._waiting, self.disk
        with torch._C.DisableTorchFunction():
            while written:
                pending, mapped, entry = written.popleft()
                disk.add(mapped, entry)
                self._mapped[pending.name] = mapped
                for tensor, on_disk in waiting.pop(pending.name, ()):
                    on_disk(_view_on(mapped, tensor))
        disk.shards = self._writer.shards

    def finish(self) -> OffloadError | None:
        """Write what is left, put it in place; the write error, if one stopped the writer
        (the values it could not write are dropped: the budget holds)."""
        self._writer.close()
        self._take_written()
        self.disk.delete_when_freed()
        self._values.write_guard = None
        error = self._writer.error
        if error is None:
            return None
        for entries in self._waiting.values():
            for _, on_disk in entries:
                on_disk(None)
        self._waiting.clear()
        reason = os.strerror(error.errno) if isinstance(error, OSError) and error.errno else error
        return OffloadError(
            getattr(error, "errno", None) or errno.EIO,
            f"writing saved values to offload={str(self.directory)!r} failed ({reason}); "
            f"{self._writer.bytes_written} bytes were written and are kept with the log, the "
            "values after them were dropped",
        )


# What gets a value's view on disk once written (None: it could not be written)
OnDisk = Callable[[Tensor | None], None]


class _ActivationOnDisk:
    """Puts the view on disk in place of saved output `index` of `node` (unless a copy
    before a write replaced it meanwhile), or drops the node's values."""

    __slots__ = ("values", "node", "index", "tensor", "where")

    def __init__(
        self, values: SavedValues, node: OpRecord, index: int, tensor: Tensor, where: Any
    ) -> None:
        self.values, self.node, self.index, self.tensor, self.where = (
            values, node, index, tensor, where,
        )  # fmt: skip

    def __call__(self, view: Tensor | None) -> None:
        node, i = self.node, self.index
        saved = node.activations
        if saved is None or saved[i] is not self.tensor:
            return
        if view is None:
            node.activations = None
            self.values.dropped(self.where)
            return
        node.activations = (*saved[:i], view, *saved[i + 1 :])
        self.values.replaced(self.where, i, self.tensor)


def _view_on(mapped: torch.Tensor, tensor: Tensor) -> Tensor:
    """`tensor` (dtype, shape, stride, offset, lazy conj/neg bits) over its storage's
    mapped bytes."""
    flat = mapped
    size = tensor.dtype.itemsize
    try:
        typed = flat[: flat.numel() - flat.numel() % size].view(tensor.dtype)
    except RuntimeError:  # bytes not aligned for this dtype: read into memory
        typed = flat[: flat.numel() - flat.numel() % size].clone().view(tensor.dtype)
    view = typed.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())
    if tensor.is_neg():
        view = torch._neg_view(view)  # pyright: ignore[reportPrivateImportUsage]  # no public form
    if tensor.is_conj():
        view = view.conj()
    return view


class _ItemOnDisk:
    """Puts the view on disk in place of ``holder[key]`` (still the value sent), or drops it."""

    __slots__ = ("holder", "key", "tensor")

    def __init__(self, holder: dict[Any, Tensor], key: Any, tensor: Tensor) -> None:
        self.holder, self.key, self.tensor = holder, key, tensor

    def __call__(self, view: Tensor | None) -> None:
        if self.holder.get(self.key) is self.tensor:
            if view is None:
                del self.holder[self.key]
            else:
                self.holder[self.key] = view
