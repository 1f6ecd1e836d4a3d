"""What one backward call asks of the autograd engine, and the graph it will walk.

``Tensor.backward``, ``torch.autograd.backward`` and ``torch.autograd.grad`` are read with
their own signatures: the roots (the tensors or gradient edges backward starts from),
``retain_graph`` as the engine will apply it, and the ``inputs`` the call is restricted to.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

import torch
from torch.autograd.graph import GradientEdge, Node, get_gradient_edge

_SIGNATURES: dict[Any, inspect.Signature] = {}
_next_functions = attrgetter("next_functions")
_first = itemgetter(0)


@dataclass
class BackwardCall:
    kind: str  # "backward" or "autograd.grad"
    roots: list[Node]
    retain_graph: bool
    # The tensors the call is restricted to (autograd.grad's inputs, backward(inputs=...)).
    inputs: tuple[torch.Tensor | GradientEdge, ...]
    # autograd.grad(..., is_grads_batched=True): the engine runs under vmap, one backward per
    # grad_output, so the gradients it hands its nodes are batched tensors of that vmap.
    batched: bool = False


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (torch.Tensor, GradientEdge)):
        return (value,)
    return tuple(value)


def _root_node(value: Any) -> Node | None:
    if isinstance(value, GradientEdge):
        return value.node
    if isinstance(value, torch.Tensor) and value.requires_grad:
        if value.grad_fn is not None:
            return value.grad_fn
        return get_gradient_edge(value).node  # a leaf: its AccumulateGrad
    return None


def describe_call(func: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> BackwardCall:
    """The call's roots, retain_graph and inputs, bound as the function itself binds them."""
    signature = _SIGNATURES.get(func)
    if signature is None:
        signature = _SIGNATURES[func] = inspect.signature(func)
    bound = signature.bind(*args, **(kwargs or {}))
    bound.apply_defaults()
    given = bound.arguments
    if func is torch.autograd.grad:
        kind, roots = "autograd.grad", _as_tuple(given["outputs"])
    else:
        kind = "backward"
        roots = _as_tuple(given["self"] if "self" in given else given["tensors"])
    create_graph = bool(given.get("create_graph"))
    retain = given.get("retain_graph")
    nodes = root_nodes(roots)
    return BackwardCall(
        kind,
        nodes,
        create_graph if retain is None else bool(retain),
        _as_tuple(given["inputs"]),
        batched=bool(given.get("is_grads_batched")),
    )


def root_nodes(roots: Iterable[Any]) -> list[Node]:
    """The autograd nodes a backward from `roots` (tensors, gradient edges) starts at."""
    return [node for node in map(_root_node, roots) if node is not None]


def reachable_nodes(roots: list[Node]) -> list[Node]:
    """Each autograd node reachable from `roots`, once: walked a level at a time, each
    level's edges read in C loops (a step's backward runs about six nodes per forward op,
    its graph a few nodes wide)."""
    known = set(roots)
    found = list(known)
    level: Iterable[Node] = found
    while level:
        reached = set(map(_first, chain.from_iterable(map(_next_functions, level))))
        reached.discard(None)  # (an edge to nothing: an input that needs no gradient)
        reached -= known
        known |= reached
        found += reached
        level = reached
    return found


def node_name(node: Node) -> str:
    """The autograd node's class name ("MulBackward0", "AccumulateGrad")."""
    return short_name(node.name())


def short_name(full: str) -> str:
    """A node's class name from its full name ("torch::autograd::AccumulateGrad")."""
    return full.rpartition("::")[2]
