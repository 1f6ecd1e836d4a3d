"""Find the tensors among a call's arguments and keep a replayable template of the call.

Plain tuples and lists are walked by hand (the hot path: most torch calls take a few
tensors and scalars); any other container goes through torch.utils._pytree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lens_widget.log.replay import PytreeTemplate, TensorSlot

Tensor = torch.Tensor


class _Positions(dict):
    """ "0", "1", ...: argument positions as text, made once."""

    def __missing__(self, index: int) -> str:
        self[index] = str(index)
        return self[index]


POSITIONS = _Positions()


def _scan(value: Any, position: str, found: list[tuple[str, Tensor]]) -> Any:
    kind = type(value)
    if kind is Tensor or isinstance(value, Tensor):
        found.append((position, value))
        return TensorSlot(len(found) - 1)
    if kind is tuple or kind is list:
        if not value or not any(isinstance(v, (Tensor, tuple, list, dict)) for v in value):
            return value
        return kind(_scan(v, f"{position}.{i}", found) for i, v in enumerate(value))
    if kind is dict:
        return {k: _scan(v, f"{position}.{k}", found) for k, v in value.items()}
    if kind in (int, float, bool, str) or value is None:
        return value
    if pytree._get_node_type(value) in pytree.SUPPORTED_NODES:
        leaves, spec = pytree.tree_flatten(value)
        if any(isinstance(leaf, Tensor) for leaf in leaves):
            slots = [_scan(leaf, f"{position}.{i}", found) for i, leaf in enumerate(leaves)]
            return PytreeTemplate(slots, spec)
    return value


# Argument types that never hold a tensor: left in the template as they are.
LEAF_TYPES = frozenset(
    {int, float, bool, str, type(None), torch.dtype, torch.device, torch.Size, torch.layout}
)
# What may sit in a tuple or list argument that the fast path keeps in the template as it
# is: a shape, a list of dims, an index such as (Ellipsis, slice(None, 3)). The careful
# path's scan keeps those sequences as they are too.
_LITERAL_ITEM_TYPES = LEAF_TYPES | {slice, type(Ellipsis)}


def is_literal(value: Any) -> bool:
    """A scalar-like argument, a slice, or a flat tuple or list of those: no tensor to
    resolve, and nothing the recorder calls on it can reach a torch function."""
    kind = type(value)
    if kind in _LITERAL_ITEM_TYPES:
        return True
    if kind is not tuple and kind is not list:
        return False
    return all(map(_LITERAL_ITEM_TYPES.__contains__, map(type, value)))  # C loops


# Calls with up to this many positional arguments take the recorder's fast path, which
# shares these (immutable) slots and position texts among all templates.
MAX_FAST_ARGS = 64
SLOTS = tuple(TensorSlot(i) for i in range(MAX_FAST_ARGS))
ALL_SLOTS = tuple(SLOTS[:n] for n in range(MAX_FAST_ARGS + 1))  # templates of all-tensor calls
POSITION_TEXT = tuple(str(i) for i in range(MAX_FAST_ARGS))


def tensor_slot(index: int) -> TensorSlot:
    return SLOTS[index] if index < MAX_FAST_ARGS else TensorSlot(index)


def slots_of(
    args: tuple[Any, ...], kwargs: Mapping[str, Any] | None, tensors: Iterable[Tensor]
) -> tuple[int, ...]:
    """The slot of each of `tensors` among the call's tensor arguments (scan_call's order)."""
    slots: dict[int, int] = {}
    for slot, (_, tensor) in enumerate(scan_call(args, kwargs)[2]):
        slots.setdefault(id(tensor), slot)
    return tuple(slots[id(tensor)] for tensor in tensors)


def scan_call(
    args: tuple[Any, ...], kwargs: Mapping[str, Any] | None
) -> tuple[tuple[Any, ...], dict[str, Any], list[tuple[str, Tensor]]]:
    """(args template, kwargs template, [(position, tensor)]) for one call.

    The hot path: positional tensors and scalars are handled here without recursion.
    """
    found: list[tuple[str, Tensor]] = []
    template: list[Any] | None = None
    for i, value in enumerate(args):
        if type(value) in LEAF_TYPES:
            continue
        if template is None:
            template = list(args)
        if isinstance(value, Tensor):
            template[i] = tensor_slot(len(found))
            found.append((POSITIONS[i], value))
        else:
            template[i] = _scan(value, POSITIONS[i], found)
    args_template = args if template is None else tuple(template)
    kwargs_template = {k: _scan(v, k, found) for k, v in kwargs.items()} if kwargs else {}
    return args_template, kwargs_template, found
