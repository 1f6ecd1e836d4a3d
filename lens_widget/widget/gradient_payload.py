"""What a traced backward left in the log, for the frontend (protocol.ts `GradientInfo`):
the backward passes, the named leaves (those that got no gradient first), the nodes no
gradient reached, and the autograd nodes that ran in execution order.

Gradient tensors never travel here: the inspector asks for one ("activation" request with
`value: "grad"`) and the overlay for their norms ("metrics" request, `gradNorm`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx
import torch

from lens_widget.log.gradients import BackwardPass, LeafRecord
from lens_widget.log.model_log import ModelLog
from lens_widget.widget import protocol


def has_gradients(log: ModelLog) -> bool:
    """Whether the log kept gradients of a traced backward."""
    return bool(log.backward_passes) or any(r.grads is not None for r in log.nodes)


def gradient_info(log: ModelLog) -> protocol.GradientInfo | None:
    """The GradientInfo of `log`, or None for a log without gradients."""
    if not has_gradients(log):
        return None
    leaves = sorted(log.leaves.values(), key=lambda leaf: leaf.received)  # stable: no grad first
    in_transform = {p.index for p in log.backward_passes if p.in_transform}
    reached_only = _ops_reached(log.backward_graph, in_transform) if in_transform else set()
    return {
        "passes": [_pass(p) for p in log.backward_passes],
        "leaves": [_leaf(leaf) for leaf in leaves],
        "noGrad": [
            r.label
            for r in log.nodes
            if r.grads is not None
            and all(g is None for g in r.grads)
            and r.kind != "output"
            and r.label not in reached_only
        ],
        "backward": _backward_nodes(log.backward_graph),
    }


def _pass(p: BackwardPass) -> protocol.BackwardPassInfo:
    return {
        "index": int(p.index),
        "call": p.call,
        "retainGraph": bool(p.retain_graph),
        "source": p.source,
        "nodes": [str(n) for n in p.nodes],
        "error": p.error,
        "errorOp": p.error_op,
        "errorSource": p.error_source,
        "freedBy": None if p.freed_by is None else int(p.freed_by),
        "inTransform": bool(p.in_transform),
    }


def _ops_reached(graph: nx.DiGraph, passes: set[int]) -> set[str]:
    """The forward ops whose autograd nodes ran in one of `passes` (a pass inside a torch.func
    transform keeps no gradient, yet it reached them)."""
    return {
        data["forward_op"] or data["within_op"]
        for _, data in graph.nodes(data=True)
        if (data["forward_op"] or data["within_op"]) and not passes.isdisjoint(data["passes"])
    }


def _leaf(leaf: LeafRecord) -> protocol.LeafInfo:
    return {
        "name": leaf.name,
        "kind": leaf.kind,
        "shape": [int(d) for d in leaf.shape],
        "dtype": leaf.dtype,
        "label": leaf.label,
        "source": leaf.source,
        "received": leaf.received,
        "passes": [i + 1 for i, g in enumerate(leaf.grads) if g is not None],
        "gradNorm": _norm(leaf.grad),
    }


def _norm(grad: torch.Tensor | None) -> float | None:
    """The L2 norm of a gradient, None for none or a NaN/Inf one (JSON has no NaN)."""
    if grad is None or grad.is_meta:
        return None
    if grad.is_sparse:  # an Embedding(sparse=True)'s: the norm of its (summed) entries
        grad = grad.coalesce().values()
    elif grad.layout != torch.strided:
        grad = grad.to_dense()
    wide = torch.complex128 if grad.is_complex() else torch.float64
    norm = float(torch.linalg.vector_norm(grad.detach().to(wide)))
    return norm if math.isfinite(norm) else None


def _shape_text(shape: Any) -> str:
    return "x".join(str(int(d)) for d in shape) if shape is not None else "—"


def _pass_numbers(value: object) -> list[int]:
    """A node's `backward_pass` attribute (one pass, or several with retain_graph) as a list."""
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value] if isinstance(value, Iterable) else []


def _backward_nodes(graph: nx.DiGraph) -> list[protocol.BackwardNodeInfo]:
    def node(node_id: Any, data: Mapping[str, Any]) -> protocol.BackwardNodeInfo:
        return {
            "id": str(node_id),
            "gradFn": str(data.get("grad_fn", "")),
            "forwardOp": data.get("forward_op"),
            "withinOp": data.get("within_op"),
            "order": int(data.get("order", 0)),
            "passes": _pass_numbers(data.get("backward_pass")),
            "gradShapes": [_shape_text(s) for s in data.get("grad_shapes") or ()],
            "leaf": data.get("leaf"),
            "next": [str(n) for n in graph.successors(node_id)],
        }

    nodes = [node(n, d) for n, d in graph.nodes(data=True)]
    return sorted(nodes, key=lambda n: n["order"])
