"""Every tensor a module call returned, named by its path in the returned value: "" for a
lone tensor, "0" and "1" for a tuple's items, "boxes" for a dict's key, "0.boxes" for a list
of dicts, a dataclass's field names; the same tensors, in the same order, as
`log.replay.tensor_leaves` (plus a plain dataclass's fields, which pytree does not open)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.utils import _pytree as pytree

Tensor = torch.Tensor
# How deep plain dataclasses (which pytree leaves whole) are opened.
_MAX_DATACLASS_DEPTH = 3
# How pytree names a dict's items (by key, in the dict's order), also for types it flattens
# as dicts (transformers' ModelOutput); None in a torch without it.
_NODES = pytree.SUPPORTED_NODES
_DICT_WITH_KEYS = getattr(pytree, "_dict_flatten_with_keys", None)


def named_output_leaves(value: Any, _depth: int = 0) -> list[tuple[str, Tensor]]:
    """(path, tensor) per tensor of a module's return value."""
    if type(value) is Tensor:
        return [("", value)]
    if type(value) in (tuple, list) and all(type(v) is Tensor or v is None for v in value):
        # a module's (hidden, None): flat, without pytree; a None keeps its place in the count
        return [(str(i), v) for i, v in enumerate(value) if v is not None]
    node = _NODES.get(type(value))
    if (
        _DICT_WITH_KEYS is not None
        and node is not None
        and node.flatten_with_keys_fn is _DICT_WITH_KEYS
    ):
        # a model's output (BaseModelOutput(last_hidden_state=...)) of tensors and Nones:
        # named by key as pytree does (keys() and values(), in that order), without its
        # walk (~8 µs a call warm, several times that between kernels)
        values = list(value.values())
        if all(type(v) is Tensor or v is None for v in values):
            keys = value.keys()
            return [(str(k), v) for k, v in zip(keys, values, strict=True) if v is not None]
    try:
        leaves = [(_path_text(path), leaf) for path, leaf in pytree.tree_leaves_with_path(value)]
    except ValueError:  # a type registered without key names: positions, as pytree orders them
        leaves = [(str(i), leaf) for i, leaf in enumerate(pytree.tree_leaves(value))]
    named: list[tuple[str, Tensor]] = []
    for path, leaf in leaves:
        if isinstance(leaf, Tensor):
            named.append((path, leaf))
        elif _is_dataclass_value(leaf) and _depth < _MAX_DATACLASS_DEPTH:
            for field in dataclasses.fields(leaf):
                inner = named_output_leaves(getattr(leaf, field.name), _depth + 1)
                named += [(_join(path, field.name, sub), t) for sub, t in inner]
    return named


def _is_dataclass_value(value: object) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _path_text(path: tuple[Any, ...]) -> str:
    texts = []
    for key in path:
        for attribute in ("idx", "key", "name"):
            if hasattr(key, attribute):
                texts.append(str(getattr(key, attribute)))
                break
        else:
            texts.append(str(key))
    return ".".join(texts)
