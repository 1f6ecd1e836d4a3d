"""Name every tensor inside nested inputs/outputs: ``input.0``, ``output.logits``, ..."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lens_widget.capture.unkeyed_nodes import is_unkeyed_node, unkeyed_children

# Containers pytree does not know (a transformers KV cache, a plain result object) are
# walked through their attributes, this deep at most.
_MAX_OBJECT_DEPTH = 4


def _key_text(key: Any) -> str:
    for attribute in ("idx", "key", "name"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def _fields(leaf: Any) -> list[tuple[str, Any]]:
    """(name, value) of an unregistered container's contents; [] for plain values."""
    if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
        return [(f.name, getattr(leaf, f.name)) for f in dataclasses.fields(leaf)]
    if isinstance(leaf, (torch.nn.Module, type)) or callable(leaf) or not hasattr(leaf, "__dict__"):
        return []
    return list(vars(leaf).items())


# Values that hold no tensor: named nothing, without asking pytree.
_PLAIN_TYPES = frozenset({int, float, bool, str, type(None)})


def named_tensor_leaves(
    value: Any, prefix: str, _depth: int = 0, _seen: set[int] | None = None
) -> Iterator[tuple[str, torch.Tensor]]:
    """(dotted name, tensor) per tensor leaf, in a stable order."""
    # Tensors, plain tuples, lists and dicts (most inputs and outputs) are walked here, as
    # pytree would name them, without its per-call cost (~50 us for a small structure).
    seen = set() if _seen is None else _seen
    kind = type(value)
    if kind is torch.Tensor or kind is torch.nn.Parameter:
        yield prefix, value
        return
    if kind is tuple or kind is list:
        for i, item in enumerate(value):
            yield from named_tensor_leaves(item, f"{prefix}.{i}", _depth, seen)
        return
    if kind is dict:
        for key, item in value.items():
            yield from named_tensor_leaves(item, f"{prefix}.{key}", _depth, seen)
        return
    if kind in _PLAIN_TYPES:
        return
    # Not tree_flatten_with_path: it also builds a spec through torch's tree_flatten, whose
    # self-referring helper leaves a reference cycle behind on every call. Nodes registered
    # without key functions stop pytree's walk (it would raise) and are opened one level here.
    for path, leaf in pytree.tree_leaves_with_path(value, is_leaf=is_unkeyed_node):
        name = ".".join([prefix, *(_key_text(k) for k in path)])
        if isinstance(leaf, torch.Tensor):
            yield name, leaf
        elif is_unkeyed_node(leaf):
            for child_name, child in unkeyed_children(leaf):
                yield from named_tensor_leaves(child, f"{name}.{child_name}", _depth, seen)
        elif _depth < _MAX_OBJECT_DEPTH and id(leaf) not in seen:
            seen.add(id(leaf))
            for field_name, field_value in _fields(leaf):
                yield from named_tensor_leaves(
                    field_value, f"{name}.{field_name}", _depth + 1, seen
                )


def named_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], prefix: str = "input"
) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) per tensor in a call's arguments: ``input.0`` (args[0]), ``input.1.2``
    (args[1][2]), ``input.attention_mask`` (a keyword)."""
    for name, tensor in named_tensor_leaves((args, kwargs), prefix):
        # Leaves of (args, kwargs): "input.0.1" is args[1], "input.1.mask" is kwargs["mask"].
        _, _group, *rest = name[len(prefix) :].split(".")
        yield ".".join([prefix, *rest]), tensor
