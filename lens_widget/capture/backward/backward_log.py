"""What the backward capture collects, and how it becomes the log's gradient fields.

`CaptureState` holds the live objects (autograd nodes, leaf tensors, gradients) while the
section runs. As it ends, `end_step` reads what the autograd graph and the model could
change later (node ids are strings: the log holds no autograd node; the leaves' shapes)
and gives ``log.backward_graph``, built on its first read; `fill_log_labels` then makes
the plain records that name ops by their final labels: op and source ``grads``,
``log.leaves`` by name, ``log.backward_passes``, ``log.recomputed``. A section whose
records are filled on their first read runs it then (filled_on_read.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import partial

import torch
from torch.autograd.graph import Node

from lens_widget.capture.backward.autograd_calls import node_name
from lens_widget.capture.backward.backward_graph import GraphRows, NodeState, positions
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.op_details import dtype_name
from lens_widget.log.gradients import BackwardPass, LeafKind, LeafRecord, Recomputation
from lens_widget.log.graph_on_read import GraphLater
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord

Tensor = torch.Tensor
_NAN_NODE = re.compile(r"Function '(\w+)' returned nan")


class LeafState:
    """An autograd leaf the step met (a parameter, an input, a tensor made requiring grad)."""

    __slots__ = ("tensor", "kind", "name", "node", "made_by", "grads", "ops", "shape", "dtype")

    def __init__(self, tensor: Tensor, kind: LeafKind, name: str | None) -> None:
        # (by hand: a dataclass's default factories cost a call each, for every parameter)
        self.tensor = tensor
        self.kind: LeafKind = kind
        # a parameter's address; else named at the end (an input by its label)
        self.name = name
        self.node: OpRecord | None = None  # its source node in the log
        self.made_by: OpRecord | None = None  # the recorded op that returned it
        self.grads: dict[int, Tensor] = {}  # pass index -> gradient
        self.ops: list[OpRecord] = []  # ops whose output is this leaf
        # the tensor's, read as the step ends (end_step): the log tells what it was then
        self.shape: tuple[int, ...] = ()
        self.dtype = ""


@dataclass(eq=False)
class PassState:
    index: int
    call: str
    retain_graph: bool
    source: str
    # the nodes in the order their pre-hooks ran: on error, the last is the node that raised
    order: list[Node] = field(default_factory=list)
    error: str | None = None
    error_node: Node | None = None
    freed_by: int | None = None
    in_transform: bool = False  # its gradients are not kept (BackwardPass.in_transform)


@dataclass(eq=False)
class CaptureState:
    # autograd node -> (output_nr, op) of the recorded outputs it is the grad_fn of
    by_node: dict[Node, list[tuple[int, OpRecord]]] = field(default_factory=dict)
    forward_op: dict[Node, OpRecord] = field(default_factory=dict)  # the op that made it
    leaves: dict[int, LeafState] = field(default_factory=dict)  # by id(tensor)
    op_grads: dict[OpRecord, dict[int, Tensor]] = field(default_factory=dict)
    passes: list[PassState] = field(default_factory=list)
    nodes: dict[Node, NodeState] = field(default_factory=dict)  # nodes that ran, in order
    # node -> the passes after its first that it ran in too (BackwardCapture._before_node)
    later_passes: dict[Node, list[int]] = field(default_factory=dict)
    freed_by: dict[Node, int] = field(default_factory=dict)  # last pass that freed it
    recomputed: list[tuple[OpRecord, int]] = field(default_factory=list)

    def failed(self, pass_state: PassState, err: BaseException) -> None:
        message = str(err)
        pass_state.error = f"{type(err).__name__}: {message}"
        node = pass_state.order[-1] if pass_state.order else None
        match = _NAN_NODE.search(message)
        if match is not None:  # anomaly mode names the node whose output had NaN
            node = next(
                (n for n in reversed(pass_state.order) if node_name(n) == match.group(1)), node
            )
        pass_state.error_node = node
        if node is not None and "second time" in message:
            pass_state.freed_by = self.freed_by.get(node)


@dataclass(eq=False)
class StepEnd:
    """What a traced step's end keeps for its log, without any autograd node: what the
    graph is made of (built on read), each pass's nodes by position, the leaves with their
    tensors' shapes; what is left names records by their final labels (`fill_log_labels`)."""

    op_grads: dict[OpRecord, dict[int, Tensor]]
    leaves: list[LeafState]
    graph: GraphRows
    # per pass: its record (its nodes given by fill_log_labels), the positions of its nodes
    # in the order they ran, the forward op whose saved tensors were involved when it raised
    passes: list[tuple[BackwardPass, list[int], OpRecord | None]]
    recomputed: list[tuple[OpRecord, int]]
    leaf_names: dict[int, str]  # id(leaf tensor) -> its name, given by fill_log_labels


def end_step(state: CaptureState, log: ModelLog, names: ModelNames) -> StepEnd:
    """What `state` holds that the autograd graph or the model could change later, read
    now (torch functions disabled); the log's backward graph, built on its first read."""
    # Noted as leaves when made (requiring grad, no grad_fn yet) but given a grad_fn after:
    # outputs of an autograd.Function returning its inputs (the view_as of a module's
    # full backward hooks), which are not leaves and whose ops keep their own gradients.
    leaves = {k: leaf for k, leaf in state.leaves.items() if leaf.tensor.grad_fn is None}
    for param in names.params:  # parameters no recorded op read and no backward reached
        if param.requires_grad and id(param) not in leaves:
            leaves[id(param)] = LeafState(param, "param", names.tensors[id(param)][0])
    for leaf in leaves.values():
        leaf.shape = tuple(leaf.tensor.shape)
        leaf.dtype = dtype_name(leaf.tensor.dtype)
    state.leaves = leaves
    leaf_names: dict[int, str] = {}
    rows = GraphRows(state.nodes, state.forward_op, state.later_passes)
    # the descriptor (graph_on_read.py) takes a builder too
    log.backward_graph = GraphLater(partial(rows.graph, leaf_names))  # pyright: ignore[reportAttributeAccessIssue]
    passes = [
        (
            BackwardPass(
                p.index,
                p.call,
                p.retain_graph,
                p.source,
                error=p.error,
                freed_by=p.freed_by if p.error is not None else None,
                in_transform=p.in_transform,
            ),
            positions(state.nodes, p.order),
            state.forward_op.get(p.error_node) if p.error_node else None,
        )
        for p in state.passes
    ]
    leaves_now = list(leaves.values())
    return StepEnd(state.op_grads, leaves_now, rows, passes, state.recomputed, leaf_names)


def fill_log_labels(
    step: StepEnd, log: ModelLog, ops: list[OpRecord], sinks: list[OpRecord]
) -> None:
    """Write `step` into `log` once its records' labels are final: op and leaf gradients,
    the leaves by name, the passes' and recomputations' ops by label. `ops` and `sinks`
    are the log's (given: reading them from a log still to be filled would fill it)."""
    indices = range(1, len(step.passes) + 1)
    for op in ops:
        got = step.op_grads.get(op)
        if got is not None or op.activations is not None:
            op.grads = tuple([_plain(got.get(i)) if got else None for i in indices])
    log.leaves = _leaf_records(step.leaves, indices, step.leaf_names)
    for sink in sinks:  # an output's gradient is its producer's
        refs = sink.replay[1] if sink.replay is not None else []
        if refs and refs[0][2] == 0:
            sink.grads = refs[0][1].grads
    ids = step.graph.ids()
    for record, ran, error_op in step.passes:
        record.nodes = [ids[position] for position in ran]
        if error_op is not None:
            record.error_op, record.error_source = error_op.label, error_op.source
            if "modified by an inplace operation" in (record.error or ""):
                writer = inplace_writer(error_op, ops)
                record.inplace_op = writer.label if writer is not None else None
    log.backward_passes = [record for record, _, _ in step.passes]
    log.recomputed = [Recomputation(op.label, op.func, index) for op, index in step.recomputed]


def _plain(grad: Tensor | None) -> Tensor | None:
    return grad.detach() if grad is not None and grad.requires_grad else grad


def _leaf_records(
    leaves: list[LeafState], indices: range, names: dict[int, str]
) -> dict[str, LeafRecord]:
    order = {"param": 0, "input": 1, "other": 2}
    records: dict[str, LeafRecord] = {}
    for leaf in sorted(leaves, key=lambda leaf: order[leaf.kind]):
        name, label, source = _leaf_name(leaf)
        base, k = name, 1
        while name in records:
            k += 1
            name = f"{base}#{k}"
        leaf.name = names[id(leaf.tensor)] = name
        grads = tuple([_plain(leaf.grads.get(i)) for i in indices])
        records[name] = LeafRecord(
            name, leaf.kind, leaf.shape, leaf.dtype, label, source, grads
        )  # fmt: skip
        for node in (leaf.node, *leaf.ops):
            if node is not None:
                node.grads = grads
    return records


def _leaf_name(leaf: LeafState) -> tuple[str, str | None, str]:
    """(name, log label, source) of a leaf."""
    node, made_by = leaf.node, leaf.made_by
    label = node.label if node is not None else (made_by.label if made_by is not None else None)
    if leaf.kind == "input" and node is not None:
        return node.label, label, ""
    if leaf.name is not None:
        return leaf.name, label, ""
    if made_by is not None and made_by.source:  # made by user code in the section
        return _short_source(made_by.source), label, made_by.source
    if node is not None:  # made outside: named after the op that first used it
        first = node.children[0] if node.children else node.label
        return first, label, node.source
    # No recorded op made or read it: a copy torch made inside backward (the detached input
    # of a reentrant checkpoint's recomputation)
    return "unrecorded_leaf", label, ""


def _short_source(source: str) -> str:
    path, _, line = source.rpartition(":")
    return f"{os.path.basename(path)}:{line}"


def inplace_writer(op: OpRecord, ops: list[OpRecord]) -> OpRecord | None:
    """The first op after `op` that wrote in place into `op`'s output or one of its inputs:
    the write that invalidated a tensor `op` saved for backward."""
    read = {id(op)}
    if op.replay is not None:
        read.update(id(parent) for _, parent, _ in op.replay[1])
    for later in ops:
        if later.index <= op.index or not later.inplace or later.replay is None:
            continue
        refs = later.replay[1]
        if refs and id(refs[0][1]) in read:
            return later
    return None
