"""The graph of the autograd nodes a traced step ran: read from the live nodes as the step
ends, built into ``log.backward_graph`` on its first read.

What needs the live nodes is read in C loops (`map` over the nodes: their names, forward
ops, edges): a step's backward runs about six nodes per forward op, and a Python loop over
them cost ~230 bytecodes per forward op at the step's end (BERT, `bench.bytecodes --step`).
The rows hold no autograd node; the string ids (``MulBackward0_3``), the edges between them
and the graph are made from them on the first read of the graph or of the passes.
"""

from __future__ import annotations

import threading
from itertools import chain, compress, repeat
from operator import attrgetter, itemgetter, methodcaller

import networkx as nx
import torch
from torch.autograd.graph import Node, get_gradient_edge

from lens_widget.capture.backward.autograd_calls import short_name
from lens_widget.log.records import OpRecord

# What the capture notes of an autograd node the first time it runs: (its order among the
# nodes that ran, the pass it first ran in, the shapes of the gradients it got then). A
# tuple, not an object: a step's backward runs about six nodes per forward op.
NodeState = tuple[int, int, tuple[tuple[int, ...] | None, ...]]

ACCUMULATE_GRAD = type(get_gradient_edge(torch.zeros(1, requires_grad=True)).node)
_is_accumulate = ACCUMULATE_GRAD.__instancecheck__
_name = methodcaller("name")  # "torch::autograd::AccumulateGrad", "MulBackward0"
_next_functions = attrgetter("next_functions")
_variable = attrgetter("variable")  # of an AccumulateGrad node: its leaf tensor
_first = itemgetter(0)


class GraphRows:
    """The nodes that ran, by their order of first run (a node's position is its
    NodeState's first item): what the graph is made of, without any autograd node."""

    def __init__(
        self,
        nodes: dict[Node, NodeState],
        forward_op: dict[Node, OpRecord],
        later_passes: dict[Node, list[int]],
    ) -> None:
        live = list(nodes)
        self.names: list[str] = list(map(_name, live))
        self.states: list[NodeState] = list(nodes.values())
        self.ops: list[OpRecord | None] = list(map(forward_op.get, live))
        # position -> id of the leaf tensor an AccumulateGrad node accumulates into
        accumulates = list(map(_is_accumulate, live))
        self.leaves: dict[int, int] = dict(
            zip(
                compress(range(len(live)), accumulates),
                map(id, map(_variable, compress(live, accumulates))),
                strict=True,
            )
        )
        # (position of a node, the state of a node it passes gradients to: None where that
        # one did not run) per edge, read from each node's next_functions
        next_functions = list(map(_next_functions, live))
        self.edges: list[tuple[int, NodeState | None]] = list(
            zip(
                chain.from_iterable(map(repeat, range(len(live)), map(len, next_functions))),
                map(nodes.get, map(_first, chain.from_iterable(next_functions))),
                strict=True,
            )
        )
        self.later = {nodes[node][0]: passes for node, passes in later_passes.items()}
        self._ids: list[str] | None = None
        self._grad_fns: list[str] = []  # the names' class names, made with the ids
        self._lock = threading.Lock()  # the graph and the passes may be read on two threads

    def ids(self) -> list[str]:
        """Each node's id, by position: its class name and how many nodes of that class ran
        up to it (``MulBackward0_3``)."""
        with self._lock:
            if self._ids is None:
                counts: dict[str, int] = {}
                ids = []
                self._grad_fns = list(map(short_name, self.names))
                for name in self._grad_fns:
                    counts[name] = counts.get(name, 0) + 1
                    ids.append(f"{name}_{counts[name]}")
                self._ids = ids
            return self._ids

    def graph(self, leaf_names: dict[int, str]) -> nx.DiGraph:
        """The graph, its leaves named by `leaf_names` (id of the leaf tensor -> name)."""
        ids = self.ids()
        graph = nx.DiGraph()
        for position, (node_id, grad_fn, op, state) in enumerate(
            zip(ids, self._grad_fns, self.ops, self.states, strict=True)
        ):
            order, first_pass, shapes = state
            leaf = self.leaves.get(position)
            graph.add_node(
                node_id, grad_fn=grad_fn,
                forward_op=op.label if op is not None else None, order=order,
                backward_pass=first_pass, passes=[first_pass, *self.later.get(position, ())],
                grad_shapes=shapes, leaf=leaf_names.get(leaf) if leaf else None,
            )  # fmt: skip
        graph.add_edges_from(
            (ids[parent], ids[child[0]]) for parent, child in self.edges if child is not None
        )
        _mark_within_ops(graph)
        return graph


def positions(nodes: dict[Node, NodeState], order: list[Node]) -> list[int]:
    """The positions of a pass's nodes (`order`: in the order they ran), in C loops."""
    try:
        return list(map(_first, map(nodes.__getitem__, order)))
    except KeyError:  # (each node of a pass gets its state as it runs: not expected)
        return [state[0] for state in map(nodes.get, order) if state is not None]


def _mark_within_ops(graph: nx.DiGraph) -> None:
    """`within_op` of each autograd node that no recorded op made itself but one op's
    internals did (F.linear's mm, t and view under its output's node; the matmuls of a
    math attention): the label of that op, else None. A node is inside op O when every
    node the gradient reaches it from is O's own node or inside O. Gradients reach a node
    only from nodes that ran before it, so one pass in execution order settles each."""
    owner: dict[str, str | None] = {}
    for node_id, data in sorted(graph.nodes(data=True), key=lambda item: item[1]["order"]):
        within = None
        if data["forward_op"] is None and data["grad_fn"] != "AccumulateGrad":
            owners = {owner.get(parent) for parent in graph.predecessors(node_id)}
            if len(owners) == 1:
                within = owners.pop()
        data["within_op"] = within
        owner[node_id] = data["forward_op"] or within
