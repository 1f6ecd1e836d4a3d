"""The rolled graph: each layer's passes folded into one node; edges list their passes.

`fold` maps layers onto others (the repeats of a repeated block onto its first block), so a
stack of 24 identical blocks rolls into one block whose ops carry 24 passes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from lens_widget.graph.unrolled import Edges, shape_text
from lens_widget.log.records import OpRecord, index_by_label


@dataclass
class RolledLayers:
    """The rolled graph as plain dicts: rolled node -> its passes' records (in first-seen
    order), and (source, target) -> {"passes", "shape"} in the order edges are first seen.
    An edge's passes are the target's passes it feeds, or for a target that runs once the
    source's passes it reads."""

    records: dict[str, list[OpRecord]]
    edges: Edges


def roll_layers(
    nodes: Sequence[OpRecord], by_label: Mapping[str, OpRecord], fold: Mapping[str, str]
) -> RolledLayers:
    records: dict[str, list[OpRecord]] = {}
    rolled_layer: dict[str, str] = {}  # label -> its rolled node
    rolled_pass: dict[str, int] = {}  # label -> its pass (1-based) within that node
    for node in nodes:
        layer = fold.get(node.layer, node.layer)
        passes = records.setdefault(layer, [])
        passes.append(node)
        rolled_layer[node.label] = layer
        rolled_pass[node.label] = len(passes)
    edges: Edges = {}
    for node in nodes:
        target, pass_index = rolled_layer[node.label], rolled_pass[node.label]
        once = len(records[target]) == 1
        for parent in node.parents:
            if once:  # into a node that runs once (blocks ×4 -> ln_f): the source's pass
                pass_index = rolled_pass[parent]
            key = (rolled_layer[parent], target)
            seen = edges.get(key)
            if seen is None:
                edges[key] = {"passes": [pass_index], "shape": shape_text(by_label[parent].shape)}
            elif seen["passes"][-1] != pass_index:
                seen["passes"].append(pass_index)
    return RolledLayers(records, edges)


def build_rolled_graph(
    nodes: Sequence[OpRecord],
    *,
    model_class: str = "",
    by_label: Mapping[str, OpRecord] | None = None,
    fold: Mapping[str, str] | None = None,
) -> nx.DiGraph:
    """One graph node per layer (attrs `records`, `n_passes`); edges carry `passes`, `shape`.
    `by_label` is `nodes` indexed by label, when the caller has it."""
    by_label = index_by_label(nodes) if by_label is None else by_label
    rolled = roll_layers(nodes, by_label, fold or {})
    graph = nx.DiGraph(model_class=model_class)
    for layer, passes in rolled.records.items():
        first = passes[0]
        graph.add_node(
            layer, records=passes, n_passes=len(passes), kind=first.kind, func=first.func,
            module=first.module, shape=first.shape,
        )  # fmt: skip
    graph.add_edges_from((s, t, data) for (s, t), data in rolled.edges.items())
    return graph
