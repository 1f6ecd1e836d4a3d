"""The unrolled graph: every node of the log, edges from parent to child."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import networkx as nx

from lens_widget.log.records import OpRecord, index_by_label

# (source, target) -> that edge's attributes
Edges = dict[tuple[str, str], dict[str, Any]]


def shape_text(shape: Sequence[int] | None) -> str:
    """ "1x128x768" for an edge label; "scalar" for 0-d tensors, "" when unknown."""
    if shape is None:
        return ""
    if isinstance(shape, tuple):  # a graph has few distinct shapes: write each once
        return _tuple_text(shape)
    return _text(shape)


def _text(shape: Sequence[int]) -> str:
    return "x".join(str(int(s)) for s in shape) if len(shape) else "scalar"


_tuple_text = functools.lru_cache(maxsize=4096)(_text)


def unrolled_edges(nodes: Sequence[OpRecord], by_label: Mapping[str, OpRecord]) -> Edges:
    """Every parent -> child edge (attrs `positions`, `shape`, `output_index`), in the order
    the children read them: plain dicts, for callers that need no networkx graph."""
    edges: Edges = {}
    for node in nodes:
        label = node.label
        for arg in node.parent_args:
            key = (arg.parent, label)
            seen = edges.get(key)
            if seen is not None:  # the same tensor passed twice (x * x)
                seen["positions"].append(arg.position)
                continue
            parent = by_label[arg.parent]
            shape = parent.shapes[arg.output_index] if parent.shapes else parent.shape
            edges[key] = {
                "positions": [arg.position],
                "shape": shape_text(shape),
                "output_index": arg.output_index,
            }
    return edges


def by_source(
    edges: Mapping[tuple[str, str], Any], order: Iterable[str]
) -> Iterator[tuple[str, str, Any]]:
    """`edges` as networkx's `graph.edges(data=True)` lists them when the graph's nodes were
    added in `order` and its edges in `edges`' order: by source, then by insertion."""
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for (source, target), data in edges.items():
        out.setdefault(source, []).append((source, target, data))
    for source in order:
        yield from out.get(source, ())


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
    graph.add_edges_from((s, t, data) for (s, t), data in unrolled_edges(nodes, by_label).items())
    return graph
