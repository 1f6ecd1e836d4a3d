"""Open the safetensors file of a saved log: memory-mapped storages and the views on them.

safetensors maps the file into memory: opening reads only its header, and a tensor's bytes
are read from disk when that tensor's values are first used. Every header field is checked
against log.json, and every view against the bounds of its storage, before any tensor is
made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open

from lens_widget.store.format import FORMAT_NAME, LogFormatError, fail
from lens_widget.store.values_codec import dtype_from_name


def open_storages(path: Path, entries: list[dict[str, Any]], save_id: str) -> list[torch.Tensor]:
    """Each storage of log.json as flat uint8 bytes mapped from the file (nothing read yet)."""
    where = path.name
    if not path.is_file():
        raise fail(where, "missing: a saved log is a directory with log.json and this file")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != FORMAT_NAME:
                raise fail(where, "not the tensor file of a lens_widget log")
            if metadata.get("save_id") != save_id:
                raise fail(where, "belongs to a different save than log.json (mixed files?)")
            names = set(handle.keys())
            expected = {entry["name"] for entry in entries}
            if names != expected:
                odd = sorted(names ^ expected)[:5]
                raise fail(where, f"holds other tensors than log.json lists: {odd}")
            return [_flat(handle.get_tensor(entry["name"]), entry, where) for entry in entries]
    except LogFormatError:
        raise
    except Exception as err:  # safetensors' header checks: sizes, offsets, dtypes, JSON
        raise fail(
            where, f"damaged or not a safetensors file ({type(err).__name__}: {err})"
        ) from None


def _flat(tensor: torch.Tensor, entry: dict[str, Any], where: str) -> torch.Tensor:
    name = entry["name"]
    dtype = dtype_from_name(entry["dtype"], f"{where}: {name}")
    if tensor.dtype != dtype or list(tensor.shape) != entry["shape"]:
        raise fail(
            where,
            f"{name} is {tensor.dtype} {list(tensor.shape)}, log.json says "
            f"{dtype} {entry['shape']}",
        )
    flat = tensor.reshape(-1).view(torch.uint8)
    if flat.numel() != entry["nbytes"]:
        raise fail(where, f"{name} holds {flat.numel()} bytes, log.json says {entry['nbytes']}")
    if flat.numel() == 0:
        # An empty mapped tensor points at its neighbour's bytes; an empty storage of its
        # own keeps the storages apart, as they were when saved.
        return torch.empty(0, dtype=torch.uint8)
    return flat


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
        tensor = torch._neg_view(tensor)
    if view.get("conj"):
        if not tensor.is_complex():
            raise fail(where, f"a conjugate view of {dtype}, which is not complex")
        tensor = tensor.conj()
    return tensor
