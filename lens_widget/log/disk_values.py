"""Saved values that live on disk: which safetensors file (and which entry of it) holds the
memory behind a tensor of the log, and the files mapped back as tensors.

A trace with ``offload=`` (capture/offload/offload.py) writes saved values into safetensors shards
while the pass runs and puts views of the mapped files in their place; a loaded log's
tensors are views of its mapped files too. `DiskValues` is what the log keeps of that: a
save (store/save.py) finds a value's file here and links the file instead of copying it.
"""

from __future__ import annotations

import json
import mmap
import struct
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import torch

# The "format" in a shard's safetensors metadata (beside its "save_id": the ShardFile's id)
SHARD_FORMAT = "lens_widget.values"


@dataclass(frozen=True)
class ShardFile:
    """One safetensors file of saved values: its path and the id in its metadata."""

    path: Path
    id: str


@dataclass(frozen=True)
class DiskEntry:
    """One entry of a shard: a whole storage, written as `dtype` with `shape`."""

    shard: ShardFile
    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    complex_as_real: bool = False


@dataclass(eq=False)
class DiskValues:
    """The shards of a log's saved values, and which entry each mapped storage is.

    `directory`: where the shards are (the trace's ``offload=`` path). Entries are found by
    the data pointer of the mapped storage, which the log's tensors keep alive.
    """

    directory: Path
    shards: list[ShardFile] = field(default_factory=list)
    _by_pointer: dict[int, DiskEntry] = field(default_factory=dict)
    # Files deleted when this is freed (an offloaded trace's shards; see delete_when_freed)
    _owned: set[Path] = field(default_factory=set)

    def delete_when_freed(self) -> None:
        """The shards are scratch space of this log (an offloaded trace's): they are deleted
        when it is freed, except those a save in their own directory keeps (`keep`); a save
        elsewhere holds hard links of its own. Values still mapped stay readable."""
        self._owned.update(shard.path for shard in self.shards)
        weakref.finalize(self, _delete, self._owned)

    def keep(self, path: Path) -> None:
        """`path` is part of a save now: not deleted with the log."""
        self._owned.discard(path)

    def add(self, storage: torch.Tensor, entry: DiskEntry) -> None:
        """`storage` (flat bytes mapped from `entry`) holds that entry."""
        if storage.numel():
            self._by_pointer[storage.data_ptr()] = entry

    def entry_of(self, tensor: torch.Tensor) -> DiskEntry | None:
        """The shard entry whose mapped memory `tensor` views, or None (a value in memory)."""
        if tensor.device.type != "cpu" or tensor.layout != torch.strided:
            return None
        try:
            storage = tensor.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return None
        entry = self._by_pointer.get(storage.data_ptr())
        return entry if entry is not None and entry.nbytes == storage.nbytes() else None

    @property
    def nbytes(self) -> int:
        """Bytes of the values on disk (each entry once)."""
        return sum(e.nbytes for e in {id(e): e for e in self._by_pointer.values()}.values())


def _delete(paths: set[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def map_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Each entry of a safetensors file as flat uint8 bytes mapped from it, privately (copy
    on write: writing into a mapped tensor never changes the file); nothing is read but
    the header. The caller has checked the header (safetensors.safe_open) or wrote the file."""
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(length))
        size = path.stat().st_size
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY) if size else None
    start = 8 + length
    view = memoryview(mapped) if mapped is not None else memoryview(b"")
    entries: dict[str, torch.Tensor] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = (int(x) for x in info["data_offsets"])
        if begin == end:  # an empty entry: nothing to map
            entries[name] = torch.empty(0, dtype=torch.uint8)
        else:
            entries[name] = torch.frombuffer(view[start + begin : start + end], dtype=torch.uint8)
    return entries
