"""The unrolled graph: every node of the log, edges from parent to child."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx

from lens_widget.log.records import OpRecord, index_by_label


def shape_text(shape: Sequence[int] | None) -> str:
    """ "1x128x768" for an edge label; "scalar" for 0-d tensors, "" when unknown."""
    if shape is None:
        return ""
    return "x".join(str(int(s)) for s in shape) if len(shape) else "scalar"


def build_unrolled_graph(
    nodes: Sequence[OpRecord],
    *,
    model_class: str = "",
    by_label: Mapping[str, OpRecord] | None = None,
) -> nx.DiGraph:
    """One graph node per record (attr `record`); edges carry `positions`, `shape`,
    `output_index`. `by_label` is `nodes` indexed by label, when the caller has it."""
    by_label = index_by_label(nodes) if by_label is None else by_label
    graph = nx.DiGraph(model_class=model_class)
    graph.add_nodes_from(
        (
            n.label,
            {"record": n, "kind": n.kind, "func": n.func, "module": n.module, "shape": n.shape},
        )
        for n in nodes
    )
    for node in nodes:
        for arg in node.parent_args:
            parent = by_label[arg.parent]
            shape = parent.shapes[arg.output_index] if parent.shapes else parent.shape
            if graph.has_edge(arg.parent, node.label):  # the same tensor passed twice (x * x)
                graph.edges[arg.parent, node.label]["positions"].append(arg.position)
            else:
                graph.add_edge(
                    arg.parent, node.label, positions=[arg.position], shape=shape_text(shape),
                    output_index=arg.output_index,
                )  # fmt: skip
    return graph
