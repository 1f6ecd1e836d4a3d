"""The rolled graph: each layer's passes folded into one node; edges list their passes.

`fold` maps layers onto others (the repeats of a repeated block onto its first block), so a
stack of 24 identical blocks rolls into one block whose ops carry 24 passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import networkx as nx

from lens_widget.graph.unrolled import shape_text

if TYPE_CHECKING:
    from lens_widget.log.model_log import ModelLog
    from lens_widget.log.records import OpRecord


def build_rolled_graph(log: ModelLog, fold: Mapping[str, str] | None = None) -> nx.DiGraph:
    fold = fold or {}
    graph = nx.DiGraph(model_class=log.model_class)
    records: dict[str, list[OpRecord]] = {}
    rolled_layer: dict[str, str] = {}  # label -> rolled node
    rolled_pass: dict[str, int] = {}  # label -> pass (1-based) within its rolled node
    for node in log.nodes:
        layer = fold.get(node.layer, node.layer)
        passes = records.setdefault(layer, [])
        passes.append(node)
        rolled_layer[node.label] = layer
        rolled_pass[node.label] = len(passes)
    for layer, passes in records.items():
        first = passes[0]
        graph.add_node(
            layer, records=passes, n_passes=len(passes), kind=first.kind, func=first.func,
            module=first.module, shape=first.shape,
        )  # fmt: skip
    by_label = {n.label: n for n in log.nodes}
    for node in log.nodes:
        target, pass_index = rolled_layer[node.label], rolled_pass[node.label]
        for parent in node.parents:
            source = rolled_layer[parent]
            if graph.has_edge(source, target):
                passes_seen = graph.edges[source, target]["passes"]
                if passes_seen[-1] != pass_index:
                    passes_seen.append(pass_index)
            else:
                graph.add_edge(
                    source, target, passes=[pass_index], shape=shape_text(by_label[parent].shape)
                )
    return graph
