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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from lens_widget.capture.features import Feature
from lens_widget.capture.shard_writer import ShardWriter
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.disk_values import DiskValues
from lens_widget.log.records import OpRecord

Tensor = torch.Tensor
_MEMORY = ""  # a storage's decision: kept in memory (else: its entry name in the writer)
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
    (a shard is written once this much waits; the pass waits while twice that does)."""

    directory: Path
    budget: int = 0
    shard_bytes: int = 32 << 20
    pending_limit: int = 64 << 20


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
    return OffloadSpec(directory, budget)


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
        self.budget = spec.budget
        self.in_memory = 0  # bytes of the storages kept in memory
        self.saved_bytes = 0  # bytes of every distinct storage kept, in memory or not
        self._model_tensors = model_tensors  # ids of the model's parameters and buffers
        self._values = book.values
        self._writer = ShardWriter(
            directory, shard_bytes=spec.shard_bytes, pending_limit=spec.pending_limit
        )
        self.disk = DiskValues(directory)
        # storage pointer -> (weak reference to it, _MEMORY or its entry name); a pointer
        # whose storage is gone may be another storage's now (the reference says so).
        self._decided: dict[int, tuple[StorageWeakRef, str]] = {}
        # entry name -> [(node, output index, the saved tensor, where SavedValues holds
        # it)] waiting for its shard...
        self._waiting: dict[str, list[tuple[OpRecord, int, Tensor, Any]]] = {}
        # ...and its mapped bytes once written (a later view of the same storage reads them)
        self._mapped: dict[str, Tensor] = {}
        book.values.write_guard = self._before_write

    # ---- hooks -------------------------------------------------------------------------

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        saved = node.activations
        if saved is not None:
            self._place(node, saved)

    def source_added(self, tensor: Tensor, node: OpRecord) -> None:
        saved = node.activations
        if saved is not None and id(tensor) not in self._model_tensors:
            self._place(node, saved)

    # ---- the values --------------------------------------------------------------------

    def _place(self, node: OpRecord, saved: tuple[Tensor, ...]) -> None:
        writer = self._writer
        if writer.written:
            self._take_written()
        where = self._values.locate(node)
        if where is None:
            return
        with torch._C.DisableTorchFunction():
            for i, tensor in enumerate(saved):
                if tensor.layout != torch.strided or tensor.device.type == "meta":
                    continue  # sparse and meta values stay as they are
                storage = tensor.untyped_storage()
                key = storage.data_ptr()
                known = self._decided.get(key)
                if known is None or known[0].expired():
                    decision = self._decide(storage, tensor, key)
                    self._decided[key] = (StorageWeakRef(storage), decision)
                else:
                    decision = known[1]
                if decision is _MEMORY:
                    continue
                mapped = self._mapped.get(decision)
                if mapped is None:
                    self._waiting.setdefault(decision, []).append((node, i, tensor, where))
                else:
                    self._replace(node, i, tensor, where, mapped)

    def _decide(self, storage: torch.UntypedStorage, tensor: Tensor, key: int) -> str:
        nbytes = storage.nbytes()
        self.saved_bytes += nbytes
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
        return _MEMORY if name is None else name  # the writer failed: kept, reported at the end

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

    def _take_written(self) -> None:
        """Views of the mapped shards in place of the values written so far."""
        written, waiting, disk = self._writer.written, self._waiting, self.disk
        with torch._C.DisableTorchFunction():
            self._take(written, waiting, disk)
        disk.shards = self._writer.shards

    def _take(self, written: Any, waiting: Any, disk: DiskValues) -> None:
        while written:
            pending, mapped, entry = written.popleft()
            disk.add(mapped, entry)
            self._mapped[pending.name] = mapped
            for node, i, tensor, where in waiting.pop(pending.name, ()):
                self._replace(node, i, tensor, where, mapped)

    def _replace(self, node: OpRecord, i: int, tensor: Tensor, where: Any, mapped: Tensor) -> None:
        saved = node.activations
        if saved is None or saved[i] is not tensor:
            return  # replaced meanwhile (a copy before a write)
        view = _view_on(mapped, tensor)
        node.activations = (*saved[:i], view, *saved[i + 1 :])
        self._values.replaced(where, i, tensor)

    def finish(self) -> OffloadError | None:
        """Write what is left, put it in place; the write error, if one stopped the writer
        (the values it could not write are dropped: the budget holds)."""
        self._writer.close()
        self._take_written()
        error = self._writer.error
        if error is None:
            return None
        for entries in self._waiting.values():
            for node, _, _, where in entries:
                node.activations = None
                self._values.dropped(where)
        self._waiting.clear()
        reason = os.strerror(error.errno) if isinstance(error, OSError) and error.errno else error
        return OffloadError(
            getattr(error, "errno", None) or errno.EIO,
            f"writing saved values to offload={str(self.directory)!r} failed ({reason}); "
            f"{self._writer.bytes_written} bytes were written and are kept with the log, the "
            "values after them were dropped",
        )


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
