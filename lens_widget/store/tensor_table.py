"""Collect the tensors of a log for saving; each storage is written once.

Tensors that share memory (views, a saved reference to a parameter, the same tensor saved by
two nodes) are found by their storage, and each distinct storage is written once, whole,
into the safetensors file. Every tensor is then a view of one stored storage: dtype, shape,
stride, offset (plus torch's lazy conjugate/negative bits), exactly as in memory.

A storage that already lives in a file of values (an offloaded trace's shard, disk_values.py)
is not written again: its entry names that file, which the save links into its directory.
"""

from __future__ import annotations

from typing import Any

import torch

from lens_widget.log.disk_values import DiskEntry, DiskValues, ShardFile
from lens_widget.store.values_codec import dtype_name

# dtypes the safetensors format stores as themselves, with its names for them; any other
# dtype is stored as its bytes (U8).
SAFETENSORS_CODES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.float8_e4m3fn: "F8_E4M3",
    torch.float8_e5m2: "F8_E5M2",
}  # fmt: skip
SAFETENSORS_DTYPES = frozenset(SAFETENSORS_CODES)

StorageKey = tuple[str, int, int]


def _storage_key(tensor: torch.Tensor) -> StorageKey:
    storage = tensor.untyped_storage()
    return (str(tensor.device), storage.data_ptr(), storage.nbytes())


def _check_savable(tensor: torch.Tensor, what: str) -> None:
    if (
        tensor.layout not in (torch.strided, torch.sparse_coo)
        or tensor.is_quantized
        or tensor.is_nested
    ):
        raise TypeError(
            f"cannot save {what}: a {tensor.layout} {tensor.dtype} tensor; only dense "
            "(strided) and sparse COO tensors are saved"
        )
    if tensor.device.type == "meta":
        raise TypeError(f"cannot save {what}: a meta tensor has no values")


class TensorTable:
    """Tensors by position in the saved table; storages in the order first seen."""

    def __init__(self, disk: DiskValues | None = None) -> None:
        self._disk = disk
        # storage index -> its entry in a file of values (not written: linked)
        self._on_disk: dict[int, DiskEntry] = {}
        self.views: list[dict[str, Any]] = []
        self._ids: dict[int, int] = {}
        self._alive: list[torch.Tensor] = []  # keeps id() of a tensor unique while saving
        self._storages: dict[StorageKey, int] = {}
        self._members: list[list[torch.Tensor]] = []

    def add(self, tensor: torch.Tensor, what: str) -> int:
        """The table index of `tensor` (the same object always gets the same index)."""
        known = self._ids.get(id(tensor))
        if known is not None:
            return known
        _check_savable(tensor, what)
        if tensor.layout == torch.sparse_coo:
            return self._add_sparse(tensor, what)
        key = _storage_key(tensor)
        storage = self._storages.get(key)
        if storage is None:
            storage = self._storages[key] = len(self._members)
            self._members.append([])
            entry = self._disk.entry_of(tensor) if self._disk is not None else None
            if entry is not None:
                self._on_disk[storage] = entry
        self._members[storage].append(tensor)
        view: dict[str, Any] = {
            "storage": storage,
            "dtype": dtype_name(tensor.dtype),
            "shape": list(tensor.shape),
            "stride": list(tensor.stride()),
            "offset": tensor.storage_offset(),
        }
        if tensor.is_conj():
            view["conj"] = True
        if tensor.is_neg():
            view["neg"] = True
        return self._new_entry(tensor, view)

    def _add_sparse(self, tensor: torch.Tensor, what: str) -> int:
        """A sparse COO tensor: its indices and values are entries of their own (dense), and
        its entry names them; they come first, so an entry only names earlier ones."""
        sparse = tensor.detach()
        indices = self.add(sparse._indices(), f"{what} (indices)")
        values = self.add(sparse._values(), f"{what} (values)")
        view = {
            "sparse_coo": [indices, values],
            "dtype": dtype_name(sparse.dtype),
            "shape": list(sparse.shape),
            "coalesced": sparse.is_coalesced(),
        }
        return self._new_entry(tensor, view)

    def _new_entry(self, tensor: torch.Tensor, view: dict[str, Any]) -> int:
        """`tensor`'s entry, appended; its index, found again by the tensor's id."""
        self.views.append(view)
        self._alive.append(tensor)
        index = self._ids[id(tensor)] = len(self.views) - 1
        return index

    def storages(
        self,
    ) -> tuple[dict[str, torch.Tensor], list[dict[str, Any]], list[ShardFile]]:
        """(name -> contiguous CPU tensor to write, the JSON entry of each storage, the
        files of values its entries name: ``"file": k`` is the k-th)."""
        to_write: dict[str, torch.Tensor] = {}
        entries: list[dict[str, Any]] = []
        files: dict[ShardFile, int] = {}
        for index, members in enumerate(self._members):
            on_disk = self._on_disk.get(index)
            if on_disk is not None:
                entries.append({
                    "name": on_disk.name, "dtype": on_disk.dtype, "shape": list(on_disk.shape),
                    "nbytes": on_disk.nbytes, "file": files.setdefault(on_disk.shard, len(files)),
                })  # fmt: skip
                continue
            name = f"s{index}"
            base = _base(members)
            entry: dict[str, Any] = {"name": name}
            if base.is_complex():
                # safetensors has no complex dtypes: the same bytes as (..., 2) real values
                base = torch.view_as_real(base)
                entry["complex_as_real"] = True
            base = base.cpu()
            entry.update(dtype=dtype_name(base.dtype), shape=list(base.shape))
            entry["nbytes"] = base.numel() * base.element_size()
            entries.append(entry)
            to_write[name] = base
        return to_write, entries, list(files)


def _whole_storage(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's entire storage as flat bytes (a view, no copy)."""
    flat = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    return flat.set_(tensor.untyped_storage())


def _base(members: list[torch.Tensor]) -> torch.Tensor:
    """What to write for one storage: a tensor that covers it exactly, so the file reads
    naturally in other safetensors tools; otherwise the storage flat, typed when it can be."""
    nbytes = members[0].untyped_storage().nbytes()
    for tensor in members:
        if (
            tensor.is_contiguous()
            and tensor.storage_offset() == 0
            and tensor.numel() * tensor.element_size() == nbytes
            and not tensor.is_conj()
            and not tensor.is_neg()
            and (tensor.dtype in SAFETENSORS_DTYPES or tensor.is_complex())
        ):
            return tensor.detach()
    flat = _whole_storage(members[0])
    first = members[0].dtype
    size = first.itemsize
    if (first in SAFETENSORS_DTYPES or members[0].is_complex()) and nbytes % size == 0:
        return flat.view(first)
    return flat
