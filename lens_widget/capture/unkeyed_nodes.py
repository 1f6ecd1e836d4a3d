"""Names for the children of pytree nodes registered without key functions.

transformers 4.x registers its ``ModelOutput``, diffusers its ``BaseOutput`` (and a user may
register a class) with ``register_pytree_node`` but no ``flatten_with_keys_fn``, so pytree's
keyed walk raises on them. Such a node is opened one level through its registered flatten
function and its children are named by the fields they came from where the node says
(the flatten context listing field names, mapping keys, namedtuple or dataclass fields),
by position where it does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from torch.utils import _pytree as pytree

# Private, but it is how pytree itself finds a node's registration (namedtuples included).
_node_type = pytree._get_node_type


def is_unkeyed_node(value: Any) -> bool:
    """True for a value of a type registered with pytree without key functions."""
    handler = pytree.SUPPORTED_NODES.get(_node_type(value))
    return handler is not None and getattr(handler, "flatten_with_keys_fn", None) is None


def unkeyed_children(node: Any) -> list[tuple[str, Any]]:
    """(name, child) per child of ``node``, flattened one level by its registered function."""
    handler = pytree.SUPPORTED_NODES[_node_type(node)]
    flat, context = handler.flatten_fn(node)
    children = list(flat)
    names = _context_names(context, len(children)) or _matched_field_names(node, children)
    return list(zip(names or [str(i) for i in range(len(children))], children, strict=True))


def _context_names(context: Any, count: int) -> list[str] | None:
    """The context as names when it is one string per child (transformers' and diffusers'
    flatten functions return the output's keys there)."""
    is_names = isinstance(context, (list, tuple)) and len(context) == count
    if is_names and all(isinstance(item, str) for item in context):
        return list(context)
    return None


def _field_values(node: Any) -> list[tuple[str, Any]]:
    """(field name, value) of a mapping, namedtuple or dataclass; [] for anything else."""
    if isinstance(node, Mapping):
        return [(str(key), item) for key, item in node.items()]
    namedtuple_fields = getattr(type(node), "_fields", None)
    if isinstance(node, tuple) and isinstance(namedtuple_fields, tuple):
        return [(name, getattr(node, name)) for name in namedtuple_fields]
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [(field.name, getattr(node, field.name)) for field in dataclasses.fields(node)]
    return []


def _matched_field_names(node: Any, children: list[Any]) -> list[str] | None:
    """Each child's field, found by identity in field order; None unless every child is one
    of the node's field values (then the flatten function made values of its own)."""
    fields = _field_values(node)
    names: list[str] = []
    start = 0
    for child in children:
        for position in range(start, len(fields)):
            if fields[position][1] is child:
                names.append(fields[position][0])
                start = position + 1
                break
        else:
            return None
    return names
