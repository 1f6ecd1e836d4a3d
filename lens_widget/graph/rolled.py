"""The rolled graph: each layer's passes folded into one node; edges list their passes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from lens_widget.graph.unrolled import shape_text

if TYPE_CHECKING:
    from lens_widget.log.model_log import ModelLog
    from lens_widget.log.records import OpRecord


def build_rolled_graph(log: ModelLog) -> nx.DiGraph:
    graph = nx.DiGraph(model_class=log.model_class)
    records: dict[str, list[OpRecord]] = {}
    for node in log.nodes:
        records.setdefault(node.layer, []).append(node)
    for layer, passes in records.items():
        first = passes[0]
        graph.add_node(
            layer, records=passes, n_passes=len(passes), kind=first.kind, func=first.func,
            module=first.module, shape=first.shape,
        )  # fmt: skip
    by_label = {n.label: n for n in log.nodes}
    for node in log.nodes:
        for parent in node.parents:
            source, target = by_label[parent].layer, node.layer
            if graph.has_edge(source, target):
                passes_seen = graph.edges[source, target]["passes"]
                if passes_seen[-1] != node.pass_index:
                    passes_seen.append(node.pass_index)
            else:
                graph.add_edge(
                    source,
                    target,
                    passes=[node.pass_index],
                    shape=shape_text(by_label[parent].shape),
                )
    return graph
