"""Open the safetensors file of a saved log: memory-mapped storages and the views on them.

safetensors checks the file's header (its length, JSON, offsets, dtypes and sizes), and
every field is checked against log.json. The tensor bytes are then mapped privately (copy
on write: writing into a loaded tensor never changes the file) and each storage is a
zero-copy view of the map, so loading reads nothing but the header and a tensor's bytes are
read from disk when it is first used. (safetensors' own get_tensor touches the first page
of every tensor, which for a log of many small tensors reads most of the file.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from lens_widget.log.disk_values import map_safetensors
from lens_widget.store.format import FORMAT_NAME, LogFormatError, fail
from lens_widget.store.tensor_table import SAFETENSORS_CODES
from lens_widget.store.values_codec import dtype_from_name


def open_storages(
    path: Path,
    entries: list[dict[str, Any]],
    save_id: str,
    *,
    format_name: str = FORMAT_NAME,
    all_listed: bool = True,
) -> list[torch.Tensor]:
    """Each storage of log.json in the file `path` as flat uint8 bytes mapped from the file
    (nothing read yet). `all_listed`: the file holds exactly the entries log.json lists (a
    shard of an offloaded trace may hold more: values of nodes the save left out)."""
    where = path.name
    if not path.is_file():
        raise fail(where, "missing: a saved log is a directory with log.json and this file")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != format_name:
                raise fail(where, "not the tensor file of a lens_widget log")
            if metadata.get("save_id") != save_id:
                raise fail(where, "belongs to a different save than log.json (mixed files?)")
            names = set(handle.keys())
            expected = {entry["name"] for entry in entries}
            if names != expected and (all_listed or not expected <= names):
                odd = sorted(expected - names if not all_listed else names ^ expected)[:5]
                raise fail(where, f"holds other tensors than log.json lists: {odd}")
            for entry in entries:
                _check_entry(handle.get_slice(entry["name"]), entry, where)
        mapped = map_safetensors(path)
    except LogFormatError:
        raise
    except Exception as err:  # safetensors' header checks: sizes, offsets, dtypes, JSON
        problem = f"{type(err).__name__}: {err}"
        raise fail(where, f"damaged or not a safetensors file ({problem})") from None
    storages = []
    for entry in entries:
        flat = mapped[entry["name"]]
        if flat.numel() != entry["nbytes"]:
            raise fail(
                where,
                f"{entry['name']} holds {flat.numel()} bytes, log.json says {entry['nbytes']}",
            )
        storages.append(flat)
    return storages


def _check_entry(tensor_slice: Any, entry: dict[str, Any], where: str) -> None:
    name = entry["name"]
    dtype = dtype_from_name(entry["dtype"], f"{where}: {name}")
    code = SAFETENSORS_CODES.get(dtype)
    shape = list(tensor_slice.get_shape())
    if code is None or tensor_slice.get_dtype() != code or shape != entry["shape"]:
        raise fail(
            where,
            f"{name} is {tensor_slice.get_dtype()} {shape}, log.json says {dtype} {entry['shape']}",
        )


def make_view(storages: list[torch.Tensor], view: dict[str, Any], where: str) -> torch.Tensor:
    """One saved tensor: its dtype, shape, stride and offset over its storage's bytes."""
    index = view["storage"]
    if index >= len(storages):
        raise fail(where, f"names storage {index}; the log has {len(storages)}")
    flat = storages[index]
    dtype = dtype_from_name(view["dtype"], where)
    shape, stride, offset = view["shape"], view["stride"], view["offset"]
    if len(stride) != len(shape):
        raise fail(where, f"shape {shape} and stride {stride} differ in length")
    size = dtype.itemsize
    # Bytes the view reaches; an empty tensor reaches none.
    if all(shape):
        end = (offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) + 1) * size
    else:
        end = 0
    if end > flat.numel():
        raise fail(where, f"reaches byte {end} of storage {index}, which has {flat.numel()}")
    usable = flat.numel() - flat.numel() % size
    try:
        typed = flat[:usable].view(dtype)
    except RuntimeError:  # mapped bytes not aligned for this dtype: this one is read now
        typed = flat[:usable].clone().view(dtype)
    tensor = typed.as_strided(shape, stride, typed.storage_offset() + offset)
    if view.get("neg"):
        tensor = torch._neg_view(tensor)  # pyright: ignore[reportPrivateImportUsage]  # no public form
    if view.get("conj"):
        if not tensor.is_complex():
            raise fail(where, f"a conjugate view of {dtype}, which is not complex")
        tensor = tensor.conj()
    return tensor


def make_sparse(
    indices: torch.Tensor, values: torch.Tensor, view: dict[str, Any], where: str
) -> torch.Tensor:
    """A sparse COO tensor from its saved indices and values, each checked against its entry
    (torch checks that every index lies inside the shape)."""
    dtype = dtype_from_name(view["dtype"], where)
    shape = view["shape"]
    if indices.dtype != torch.int64 or indices.dim() != 2:
        raise fail(
            where, f"sparse indices must be int64 of 2 dims, not {indices.dtype} {indices.dim()}-d"
        )
    sparse_dims = indices.shape[0]
    if values.dtype != dtype:
        raise fail(where, f"sparse values are {values.dtype}, dtype says {dtype}")
    if (
        values.dim() < 1
        or values.shape[0] != indices.shape[1]
        or sparse_dims + values.dim() - 1 != len(shape)
        or list(values.shape[1:]) != shape[sparse_dims:]
    ):
        raise fail(
            where,
            f"sparse indices {list(indices.shape)} and values {list(values.shape)} do not make "
            f"shape {shape}",
        )
    try:
        return torch.sparse_coo_tensor(
            indices, values, shape, is_coalesced=view["coalesced"], check_invariants=True
        )
    except RuntimeError as err:  # an index outside the shape, unsorted "coalesced" indices
        raise fail(where, f"not a valid sparse tensor ({err})") from None
