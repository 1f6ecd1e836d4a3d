"""The rolled graph: each layer's passes folded into one node; edges list their passes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx

from lens_widget.graph.unrolled import shape_text
from lens_widget.log.records import OpRecord, index_by_label


def build_rolled_graph(
    nodes: Sequence[OpRecord],
    *,
    model_class: str = "",
    by_label: Mapping[str, OpRecord] | None = None,
) -> nx.DiGraph:
    """One graph node per layer (attrs `records`, `n_passes`); edges carry `passes`, `shape`.
    `by_label` is `nodes` indexed by label, when the caller has it."""
    by_label = index_by_label(nodes) if by_label is None else by_label
    graph = nx.DiGraph(model_class=model_class)
    records: dict[str, list[OpRecord]] = {}
    for node in nodes:
        records.setdefault(node.layer, []).append(node)
    for layer, passes in records.items():
        first = passes[0]
        graph.add_node(
            layer, records=passes, n_passes=len(passes), kind=first.kind, func=first.func,
            module=first.module, shape=first.shape,
        )  # fmt: skip
    for node in nodes:
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
