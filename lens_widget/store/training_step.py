"""The backward half of a saved log (a traced training step): the named autograd leaves
with their gradients per pass, the backward passes, the graph of autograd nodes that ran,
and the forward ops that checkpointing recomputed. The `backward` field of log.json
(docs/log-format.md); absent for a log of a forward alone.

Loading checks every reference between these records and the nodes (a leaf's node, a
pass's autograd nodes, an edge's ends, a recomputed op) before anything uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import networkx as nx
import torch

from lens_widget.log.gradients import BackwardPass, LeafRecord, Recomputation
from lens_widget.log.records import OpRecord
from lens_widget.store.format import JSON_FILE, fail
from lens_widget.store.tensor_table import TensorTable

_WHERE = f"{JSON_FILE}: backward"
# The attributes of a backward graph node, as capture/backward/backward_log.py sets them.
_NODE_FIELDS = (
    "grad_fn", "forward_op", "within_op", "order", "backward_pass", "passes", "grad_shapes",
    "leaf",
)  # fmt: skip


class TrainingStep(NamedTuple):
    """ModelLog's fields for what a traced backward left; all empty for a forward alone."""

    leaves: dict[str, LeafRecord]
    backward_passes: list[BackwardPass]
    backward_graph: nx.DiGraph
    recomputed: list[Recomputation]


class _HasTrainingStep(Protocol):
    leaves: dict[str, LeafRecord]
    backward_passes: list[BackwardPass]
    backward_graph: nx.DiGraph
    recomputed: list[Recomputation]


def encode_training_step(log: _HasTrainingStep, table: TensorTable) -> dict[str, Any] | None:
    """The `backward` field of log.json, None when the log ran no backward."""
    graph = log.backward_graph
    if not (log.leaves or log.backward_passes or graph.number_of_nodes() or log.recomputed):
        return None
    return {
        "leaves": [_leaf(leaf, table) for leaf in log.leaves.values()],
        "passes": [
            {
                "index": p.index,
                "call": p.call,
                "retain_graph": p.retain_graph,
                "source": p.source,
                "nodes": list(p.nodes),
                "error": p.error,
                "error_op": p.error_op,
                "error_source": p.error_source,
                "freed_by": p.freed_by,
                "inplace_op": p.inplace_op,
                **({"in_transform": True} if p.in_transform else {}),  # else: as before
            }
            for p in log.backward_passes
        ],  # fmt: skip
        "graph": {
            "nodes": [_graph_node(node_id, data) for node_id, data in graph.nodes(data=True)],
            "edges": [[a, b] for a, b in graph.edges],
        },
        "recomputed": [
            {"op": r.op, "func": r.func, "backward_pass": r.backward_pass} for r in log.recomputed
        ],
    }


def _leaf(leaf: LeafRecord, table: TensorTable) -> dict[str, Any]:
    return {
        "name": leaf.name,
        "kind": leaf.kind,
        "shape": list(leaf.shape),
        "dtype": leaf.dtype,
        "label": leaf.label,
        "source": leaf.source,
        "grads": [
            None if g is None else table.add(g, f"gradient {i} of leaf {leaf.name}")
            for i, g in enumerate(leaf.grads)
        ],
    }


def _graph_node(node_id: Any, data: Mapping[str, Any]) -> dict[str, Any]:
    shapes = data.get("grad_shapes") or ()
    return {
        "id": str(node_id),
        "grad_fn": str(data.get("grad_fn", "")),
        "forward_op": data.get("forward_op"),
        "within_op": data.get("within_op"),
        "order": int(data.get("order", 0)),
        "backward_pass": data.get("backward_pass"),
        "passes": [int(p) for p in data.get("passes") or ()],
        "grad_shapes": [None if s is None else [int(d) for d in s] for s in shapes],
        "leaf": data.get("leaf"),
    }


def decode_training_step(
    data: dict[str, Any] | None,
    by_label: Mapping[str, OpRecord],
    tensor: Callable[[int, str], torch.Tensor],
) -> TrainingStep:
    """The training step of a loaded log (schema-checked `data`); `tensor(index, where)`
    reads a saved tensor. Raises LogFormatError for a reference to nothing."""
    if data is None:
        return TrainingStep({}, [], nx.DiGraph(), [])
    n_passes = len(data["passes"])

    def node_label(label: str | None, where: str) -> None:
        if label is not None and label not in by_label:
            raise fail(where, f"{label[:80]!r} is not a node of the log")

    leaves: dict[str, LeafRecord] = {}
    for i, entry in enumerate(data["leaves"]):
        where = f"{_WHERE}.leaves[{i}]"
        if entry["name"] in leaves:
            raise fail(where, f"leaf {entry['name'][:80]!r} appears twice")
        node_label(entry["label"], f"{where}.label")
        if len(entry["grads"]) != n_passes:
            raise fail(where, f"{len(entry['grads'])} gradients for {n_passes} backward passes")
        grads = tuple(None if t is None else tensor(t, where) for t in entry["grads"])
        if any(g is not None and list(g.shape) != entry["shape"] for g in grads):
            raise fail(where, f"a gradient's shape is not the leaf's shape {entry['shape']}")
        leaves[entry["name"]] = LeafRecord(
            entry["name"], entry["kind"], tuple(entry["shape"]), entry["dtype"],
            entry["label"], entry["source"], grads,
        )  # fmt: skip

    graph = nx.DiGraph()
    for i, entry in enumerate(data["graph"]["nodes"]):
        where = f"{_WHERE}.graph.nodes[{i}]"
        if entry["id"] in graph:
            raise fail(where, f"id {entry['id'][:80]!r} appears twice")
        node_label(entry["forward_op"], f"{where}.forward_op")
        node_label(entry["within_op"], f"{where}.within_op")
        if entry["leaf"] is not None and entry["leaf"] not in leaves:
            raise fail(where, f"leaf {entry['leaf'][:80]!r} is not a leaf of the log")
        for number in [entry["backward_pass"], *entry["passes"]]:
            if number is not None and number > n_passes:
                raise fail(where, f"backward pass {number} of {n_passes}")
        attributes = {key: entry[key] for key in _NODE_FIELDS}
        attributes["grad_shapes"] = tuple(
            None if s is None else tuple(s) for s in entry["grad_shapes"]
        )
        graph.add_node(entry["id"], **attributes)
    for i, (a, b) in enumerate(data["graph"]["edges"]):
        if a not in graph or b not in graph:
            raise fail(f"{_WHERE}.graph.edges[{i}]", "joins an id that is not a graph node")
        graph.add_edge(a, b)

    passes = []
    for i, entry in enumerate(data["passes"]):
        where = f"{_WHERE}.passes[{i}]"
        if entry["index"] != i + 1:
            raise fail(where, f"index is {entry['index']}, but the pass is number {i + 1}")
        missing = [n for n in entry["nodes"] if n not in graph]
        if missing:
            raise fail(where, f"nodes: {missing[0][:80]!r} is not a node of the backward graph")
        node_label(entry["error_op"], f"{where}.error_op")
        node_label(entry["inplace_op"], f"{where}.inplace_op")
        if entry["freed_by"] is not None and entry["freed_by"] > n_passes:
            raise fail(where, f"freed_by names pass {entry['freed_by']} of {n_passes}")
        passes.append(BackwardPass(**entry))

    recomputed = []
    for i, entry in enumerate(data["recomputed"]):
        where = f"{_WHERE}.recomputed[{i}]"
        node_label(entry["op"], f"{where}.op")
        if entry["backward_pass"] > n_passes:
            raise fail(where, f"backward pass {entry['backward_pass']} of {n_passes}")
        recomputed.append(Recomputation(entry["op"], entry["func"], entry["backward_pass"]))
    return TrainingStep(leaves, passes, graph, recomputed)
