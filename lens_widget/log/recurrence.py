"""Recurrence: a layer whose later pass depends on its own earlier pass.

In the graph of layers (passes of one op identity folded, repeated blocks *not* folded onto
each other: twelve GPT-2 blocks are twelve layers in a row, not a loop), a cycle through data
among layers that ran more than once is recurrence: an RNN cell fed its own hidden state, a
block applied to its own output. A layer that ran twice on independent data makes no cycle,
nor does a module called from two lines with other work between (T5's dropout before and
after its stack: the stack's layers ran once, so they are in no loop with it). One kind of
cycle is an accumulation, not a recurrence: one op fed its own result that reads no weights
(`sum(...)` adding branches up). And one is plumbing: a loop inside one call of a helper function
(transformers' `and_mask` folding mask functions into one boolean mask), seen as a cycle
among the ops of one function group whose first op ran fewer times than the cycle's ops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import networkx as nx

from lens_widget.log.records import OpRecord


def recurrent_layers(ops: Sequence[OpRecord], by_label: Mapping[str, OpRecord]) -> list[str]:
    """The layers on a cycle through data that is the model's recurrence, in execution order."""
    graph = nx.DiGraph()
    for op in ops:
        if op.n_passes == 1:
            continue
        for parent in op.parents:
            source = by_label[parent]
            if source.kind == "op" and source.n_passes > 1:
                graph.add_edge(source.layer, op.layer)
    first_of_group: dict[tuple[str, str], OpRecord] = {}
    for op in ops:
        if op.function:
            first_of_group.setdefault((op.module, op.function), op)
    by_layer = {op.layer: op for op in ops}
    found: set[str] = set()
    for component in nx.strongly_connected_components(graph):
        if len(component) == 1:
            (layer,) = component
            # one op fed its own result: an RNN cell's op reads weights; without any it is
            # an accumulation (`sum(...)`, experts' outputs added up), not a recurrence
            if not graph.has_edge(layer, layer) or not by_layer[layer].params:
                continue
        if not _inside_one_call(component, by_layer, first_of_group):
            found.update(component)
    return [op.layer for op in ops if op.layer in found and op.pass_index == 1]


def _inside_one_call(
    component: set[str],
    by_layer: Mapping[str, OpRecord],
    first_of_group: Mapping[tuple[str, str], OpRecord],
) -> bool:
    groups = {(by_layer[layer].module, by_layer[layer].function) for layer in component}
    if len(groups) != 1:
        return False
    (group,) = groups
    if not group[1]:
        return False
    calls = first_of_group[group].n_passes
    return calls < min(by_layer[layer].n_passes for layer in component)
