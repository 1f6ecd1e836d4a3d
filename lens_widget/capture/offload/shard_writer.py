"""A thread that writes saved values into safetensors shards while the traced pass runs.

The recorder's thread hands it whole storages as flat bytes (`put`, on the CPU: a CUDA
value is first copied into pinned host memory without waiting, and the writer waits for
that copy's event, so the pass never synchronises the device per op). The writer gathers
what is queued into one shard (``values-<id>-00000.safetensors``, entries ``s0``, ``s1``... as
flat uint8), writes it beside its final name and renames it, maps the file back, and posts
the mapped entries for the recorder's thread to take (`take_written`): node fields are only
ever set on that thread.

Memory stays bounded: `put` waits while more than `pending_limit` bytes are queued or being
written. A write error (a full disk, a path that cannot be written) stops the writer; what
was written stays, later values are dropped, and `error` says what happened.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from lens_widget.log.disk_values import SHARD_FORMAT, DiskEntry, ShardFile, map_safetensors

_IDLE_FLUSH_S = 0.05  # what waits less than a shard's worth is written after this long


@dataclass
class Pending:
    """One storage waiting to be written: its bytes (CPU), the event of its device copy."""

    name: str
    data: torch.Tensor
    event: Any  # torch.cuda.Event or None
    key: int  # the storage's data pointer where it was saved (the recorder's lookup)


class ShardWriter:
    """Writes queued storages into shards under `directory`, on its own thread."""

    def __init__(
        self, directory: Path, *, shard_bytes: int = 32 << 20, pending_limit: int = 64 << 20
    ) -> None:
        self.directory = directory
        self.shard_bytes = shard_bytes
        self.pending_limit = max(pending_limit, shard_bytes)
        self.shards: list[ShardFile] = []
        self.written: deque[tuple[Pending, torch.Tensor, DiskEntry]] = deque()
        self.error: BaseException | None = None
        self.bytes_written = 0
        self._id = uuid.uuid4().hex
        self._queue: list[Pending] = []
        self._in_flight: list[Pending] = []
        self._pending_bytes = 0
        self._n_entries = 0
        self._flush = False
        self._closing = False
        self._cond = threading.Condition()
        # Started by the first value: a trace that stops before any leaves no thread behind
        self._thread: threading.Thread | None = None

    # ---- the recorder's thread ---------------------------------------------------------

    def put(self, data: torch.Tensor, key: int, event: Any = None) -> str | None:
        """Queue flat bytes for writing; their entry name, or None once the writer failed."""
        nbytes = _nbytes(data)
        with self._cond:
            while (
                self._pending_bytes + nbytes > self.pending_limit
                and self._pending_bytes
                and self.error is None
            ):
                self._flush = True
                self._cond.notify_all()
                self._cond.wait()
            if self.error is not None:
                return None
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="lens_widget-offload", daemon=True
                )
                self._thread.start()
            name = f"s{self._n_entries}"
            self._n_entries += 1
            self._queue.append(Pending(name, data, event, key))
            self._pending_bytes += nbytes
            if self._pending_bytes >= self.shard_bytes:
                self._cond.notify_all()
        return name

    def wait_for(self, keys: set[int]) -> None:
        """Return once no storage saved at one of these pointers waits to be written (before
        an in-place write reaches one: the file must hold the value as it was)."""
        with self._cond:
            while self.error is None and any(
                p.key in keys for p in (*self._queue, *self._in_flight)
            ):
                self._flush = True
                self._cond.notify_all()
                self._cond.wait()

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()

    # ---- the writer's thread -----------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closing and (
                    not self._queue or (self._pending_bytes < self.shard_bytes and not self._flush)
                ):
                    if self._queue:  # a partial shard: written when nothing more comes
                        if not self._cond.wait(_IDLE_FLUSH_S):
                            break
                    else:
                        self._cond.wait()
                if not self._queue:
                    return  # closing, all written
                batch, self._queue = self._queue, []
                self._in_flight = batch
                self._flush = False
            try:
                self._write(batch)
            except BaseException as err:  # noqa: BLE001 - reported to the recorder's thread
                with self._cond:
                    self.error = err
                    self._queue = []
            with self._cond:
                self._in_flight = []
                self._pending_bytes -= sum(_nbytes(p.data) for p in batch)
                if self.error is not None:
                    self._pending_bytes = 0
                self._cond.notify_all()
            if self.error is not None:
                return

    def _write(self, batch: list[Pending]) -> None:
        for pending in batch:
            if pending.event is not None:
                pending.event.synchronize()  # this thread waits for the copy, not the pass
        number = len(self.shards)
        path = self.directory / f"values-{self._id[:8]}-{number:05d}.safetensors"
        partial = path.with_name(f".{path.name}.tmp")
        metadata = {"format": SHARD_FORMAT, "save_id": self._id}
        try:
            with torch._C.DisableTorchFunction():
                save_file({p.name: p.data for p in batch}, str(partial), metadata=metadata)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        shard = ShardFile(path, self._id)
        mapped = map_safetensors(path)
        self.shards.append(shard)
        for pending in batch:
            data = pending.data
            nbytes = data.numel() * data.element_size()
            dtype = str(data.dtype).removeprefix("torch.")
            entry = DiskEntry(shard, pending.name, dtype, tuple(data.shape), nbytes)
            self.written.append((pending, mapped[pending.name], entry))
            self.bytes_written += nbytes


def _nbytes(data: torch.Tensor) -> int:
    return data.numel() * data.element_size()
