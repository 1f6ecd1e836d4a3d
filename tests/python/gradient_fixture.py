"""STAND-IN for the capture side of backward (issue #9): a forward log with gradients filled in.

Until `lw.trace(model, x, backward=fn)` / `lw.tracing(model, grads=True)` land, widget tests
get their logs with gradients from `traced_with_grads` below, and only from it: when the
capture merges, replace its body with

    lw.trace(model, inputs, kwargs, backward=lambda out: squared_mean(out))

(two passes: `lw.tracing(model, grads=True)` running two `autograd.grad` calls) and delete
the rest of this module.

The gradients here are real, computed independently of the log's own machinery: every op is
re-executed in order from its recorded call (`OpRecord.replay`) on differentiable copies of
the inputs and parameters, the replay's output is checked against the traced one, and
`torch.autograd.grad` of the loss gives the gradient of every op output and every leaf. The
backward graph is the autograd graph of that replay, walked from the loss's `grad_fn`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx
import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.gradients import BackwardPass, LeafRecord
from lens_widget.log.model_log import ModelLog
from lens_widget.log.replay import fill_template, tensor_leaves

Loss = Callable[[torch.Tensor], torch.Tensor]


def squared_mean(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()


def traced_with_grads(
    model: nn.Module,
    inputs: Any = (),
    kwargs: dict[str, Any] | None = None,
    *,
    losses: Sequence[Loss] = (squared_mean,),
    second_backward_error: bool = False,
) -> ModelLog:
    """`lw.trace(model, inputs, kwargs)` with one backward pass per loss (each applied to the
    model's single tensor output, or to `logits` of a ModelOutput) filled in: `OpRecord.grads`,
    `ModelLog.leaves`, `.backward_passes`, `.backward_graph`. `second_backward_error` adds a
    pass that raised "backward through the graph a second time" (a real error of the replay)."""
    log = lw.trace(model, inputs, kwargs)
    live = _replay(log, model)
    out = _model_output(log, live)
    graph: nx.DiGraph = nx.DiGraph()
    names: dict[int, str] = {}  # id(grad_fn) -> backward node id
    producers = {
        id(t.grad_fn): r.label
        for r in log.ops
        for t in live.get(r.label, ())[:1]
        if t.grad_fn is not None
    }
    leaf_names = {id(t): r.label for r in log.nodes for t in live.get(r.label, ()) if t.is_leaf}
    targets = [(r, live[r.label][0]) for r in log.nodes if _differentiable(live.get(r.label))]
    per_pass: list[dict[str, torch.Tensor | None]] = []
    passes: list[BackwardPass] = []
    for index, loss_fn in enumerate(losses, start=1):
        loss = loss_fn(out)
        grads = torch.autograd.grad(
            loss, [t for _, t in targets], retain_graph=True, allow_unused=True
        )
        per_pass.append({r.label: g for (r, _), g in zip(targets, grads, strict=True)})
        nodes = _walk(loss.grad_fn, graph, names, producers, leaf_names, index)
        passes.append(BackwardPass(index, "autograd.grad", True, "gradient_fixture", nodes))
    if second_backward_error:
        passes.append(_second_backward(log, out, len(passes) + 1))
    for order, node in enumerate(nx.topological_sort(graph)):
        graph.nodes[node]["order"] = order
        forward_op = graph.nodes[node]["forward_op"]
        if forward_op is not None:  # the gradient it receives: of the forward op's output
            graph.nodes[node]["grad_shapes"] = [tuple(live[forward_op][0].shape)]
    for p in passes:
        p.nodes.sort(key=lambda n: graph.nodes[n]["order"])
    for r in log.nodes:
        if r.kind != "output":
            r.grads = tuple(p.get(r.label) for p in per_pass)
    log.leaves = _leaves(log, model, per_pass)
    log.backward_passes = passes
    log.backward_graph = graph
    return log


def _differentiable(outputs: tuple[torch.Tensor, ...] | None) -> bool:
    return bool(outputs) and outputs[0].requires_grad  # type: ignore[index]


def _replay(log: ModelLog, model: nn.Module) -> dict[str, tuple[torch.Tensor, ...]]:
    """Every node's outputs re-executed from its recorded call on differentiable leaves."""
    params = dict(model.named_parameters())
    live: dict[str, tuple[torch.Tensor, ...]] = {}
    for r in log.nodes:
        if r.kind in ("param", "buffer", "const", "input"):
            value = r.activation.detach().clone()  # type: ignore[union-attr]
            wants_grad = params[r.label].requires_grad if r.label in params else False
            live[r.label] = (value.requires_grad_(wants_grad and value.is_floating_point()),)
        elif r.kind == "op":
            call, parent_refs = r.replay  # type: ignore[misc]
            tensors = [
                # a tensor whose value no node holds was copied at call time (a literal)
                call.literals[slot] if slot in call.literals else live[parent.label][index]
                for slot, (_, parent, index) in enumerate(parent_refs)
            ]
            if call.rng_state is not None:
                torch.set_rng_state(call.rng_state)
            args, kwargs = fill_template(call.args, tensors), fill_template(call.kwargs, tensors)
            result = call.func(*args, **kwargs)
            live[r.label] = tuple(tensor_leaves(result))
            saved = r.activation
            if saved is not None and saved.is_floating_point():
                torch.testing.assert_close(live[r.label][0].detach(), saved, msg=r.label)
    return live


def _model_output(log: ModelLog, live: dict[str, tuple[torch.Tensor, ...]]) -> torch.Tensor:
    sinks = [r for r in log.nodes if r.kind == "output"]
    chosen = next((s for s in sinks if s.label in ("output", "output.logits")), sinks[0])
    return live[chosen.parents[0]][0]


def _walk(
    root: Any,
    graph: nx.DiGraph,
    names: dict[int, str],
    producers: dict[int, str],
    leaf_names: dict[int, str],
    index: int,
) -> list[str]:
    """Adds the autograd nodes reachable from `root` to `graph`; their ids, root first."""
    seen: list[str] = []
    stack = [root]
    while stack:
        fn = stack.pop()
        node = _name(fn, graph, names, producers, leaf_names)
        passes = graph.nodes[node]["backward_pass"]
        if index in passes:
            continue
        passes.append(index)
        seen.append(node)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                graph.add_edge(node, _name(nxt, graph, names, producers, leaf_names))
                stack.append(nxt)
    return seen


def _name(fn: Any, graph: nx.DiGraph, names: dict[int, str], producers, leaf_names) -> str:
    if id(fn) in names:
        return names[id(fn)]
    kind = type(fn).__name__
    node = f"{kind}_{len(names)}"
    names[id(fn)] = node
    variable = getattr(fn, "variable", None)
    leaf = leaf_names.get(id(variable)) if variable is not None else None
    shapes = [tuple(variable.shape)] if variable is not None else []
    graph.add_node(
        node,
        grad_fn=kind,
        forward_op=producers.get(id(fn)),
        order=0,
        backward_pass=[],
        grad_shapes=shapes,
        leaf=leaf,
    )
    return node


def _second_backward(log: ModelLog, out: torch.Tensor, index: int) -> BackwardPass:
    """A real "backward through the graph a second time": the same graph, twice, not retained."""
    loss = squared_mean(out * 1.0)
    leaves = [t for t in [out] if t.requires_grad]
    torch.autograd.grad(loss, leaves)
    try:
        torch.autograd.grad(loss, leaves)
    except RuntimeError as e:
        message = str(e)
    else:
        raise AssertionError("the second backward did not raise")
    # Stand-in for the capture's attribution: the op that produced the model's output.
    last = log[[r for r in log.nodes if r.kind == "output"][0].parents[0]]
    return BackwardPass(
        index, "autograd.grad", False, "gradient_fixture", [], message, last.label, last.source, 1
    )


def _leaves(
    log: ModelLog, model: nn.Module, per_pass: list[dict[str, torch.Tensor | None]]
) -> dict[str, LeafRecord]:
    leaves: dict[str, LeafRecord] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        label = name if name in log.by_label else None
        leaves[name] = LeafRecord(
            name,
            "param",
            tuple(p.shape),
            str(p.dtype).removeprefix("torch."),
            label,
            grads=tuple(g.get(name) if label else None for g in per_pass),
        )
    return leaves
