"""Gradients of real transformers models in train mode: what `trace(..., backward=fn)` logs
equals what a plain, untraced training step computes, gradient by gradient.

The reference run has no lens_widget in it: forward hooks put a tensor hook
(`Tensor.register_hook`, which sees the gradient of the value the module returned) on each
module's output, and the parameters' `.grad` are read after `backward()`.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from cleanup_checks import seed_all, tensor_leaves
from torch import nn

import lens_widget as lw
from model_zoo import TEST_MODELS, ZooCase

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

FAMILIES = ["gpt2", "llama", "bert", "vit", "resnet", "whisper"]
SEED = 7


def loss_of(output: Any) -> torch.Tensor:
    first = tensor_leaves(output)[0]
    return first.float().pow(2).mean()


def build(name: str) -> ZooCase:
    case = TEST_MODELS[name]()
    case.model.train()
    return case


def plain_step(case: ZooCase) -> tuple[dict[str, list[torch.Tensor | None]], dict[str, Any]]:
    """Module output gradients (address -> one per call) and the RNG state after the step."""
    model = case.model
    names = {id(m): name for name, m in model.named_modules() if name}
    grads: dict[str, list[torch.Tensor | None]] = {}

    def on_output(module: nn.Module, _args: Any, output: Any) -> None:
        name = names.get(id(module))
        leaves = tensor_leaves(output)
        if name is None or not leaves:
            return
        calls = grads.setdefault(name, [])
        slot = len(calls)
        calls.append(None)
        first = leaves[0]
        if first.requires_grad:

            def keep(grad: torch.Tensor, name: str = name, slot: int = slot) -> None:
                grads[name][slot] = grad.clone()

            first.register_hook(keep)

    handle = torch.nn.modules.module.register_module_forward_hook(on_output)
    try:
        seed_all(SEED)
        loss_of(model(*case.args, **case.kwargs)).backward()
    finally:
        handle.remove()
    return grads, {"rng": torch.get_rng_state()}


def param_grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {
        name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()
    }


def clear_grads(model: nn.Module) -> None:
    for p in model.parameters():
        p.grad = None


@pytest.fixture(scope="module", params=FAMILIES)
def stepped(request: pytest.FixtureRequest) -> dict[str, Any]:
    case = build(request.param)
    module_grads, after_plain = plain_step(case)
    plain_params = param_grads(case.model)
    clear_grads(case.model)
    seed_all(SEED)
    log = lw.trace(case.model, case.args, case.kwargs, backward=loss_of)
    return {
        "name": request.param,
        "case": case,
        "log": log,
        "module_grads": module_grads,
        "plain_params": plain_params,
        "traced_params": param_grads(case.model),
        "rng_plain": after_plain["rng"],
        "rng_traced": torch.get_rng_state(),
    }


def test_every_module_output_gradient_equals_the_plain_step(stepped: dict[str, Any]) -> None:
    log = stepped["log"]
    checked = 0
    for address, per_call in stepped["module_grads"].items():
        info = log.modules[address]
        assert info.n_passes == len(per_call), address
        for k, expected in enumerate(per_call, start=1):
            key = f"{address}:{k}" if len(per_call) > 1 else address
            got = log[key].grad
            if expected is None:
                assert got is None or not got.any(), key
                continue
            assert got is not None, f"{stepped['name']}: no gradient logged for {key}"
            assert torch.equal(got, expected), f"{stepped['name']}: {key} differs"
            checked += 1
    assert checked >= 10


def test_parameter_gradients_are_logged_and_bit_equal_to_an_untraced_step(
    stepped: dict[str, Any],
) -> None:
    log, plain, traced = stepped["log"], stepped["plain_params"], stepped["traced_params"]
    got_grad = {name for name, g in plain.items() if g is not None}
    assert got_grad, "the plain step gave no parameter a gradient"
    for name, expected in plain.items():
        assert (traced[name] is None) == (expected is None), name
        if expected is None:
            continue
        assert torch.equal(traced[name], expected), f"user's .grad of {name} differs"
        leaf = log.leaves[name]
        assert leaf.kind == "param" and leaf.received, name
        assert torch.equal(leaf.grad, expected), f"logged grad of {name} differs"
    param_leaves = {n for n, leaf in log.leaves.items() if leaf.kind == "param" and leaf.received}
    assert param_leaves == got_grad


def test_param_source_nodes_carry_their_gradient(stepped: dict[str, Any]) -> None:
    log = stepped["log"]
    sources = [n for n in log.nodes if n.kind == "param" and n.label in log.leaves]
    assert sources
    for node in sources:
        assert torch.equal(node.grad, log.leaves[node.label].grad), node.label


def test_the_step_is_one_backward_pass_whose_graph_links_forward_ops(
    stepped: dict[str, Any],
) -> None:
    log = stepped["log"]
    assert len(log.backward_passes) == 1
    backward = log.backward_passes[0]
    assert backward.call == "backward" and backward.error is None and not backward.retain_graph
    graph = log.backward_graph
    assert backward.nodes == sorted(graph.nodes, key=lambda n: graph.nodes[n]["order"])
    labels = {op.label for op in log.ops}
    linked = [n for n, d in graph.nodes(data=True) if d["forward_op"] is not None]
    leaves = [n for n, d in graph.nodes(data=True) if d["grad_fn"] == "AccumulateGrad"]
    # A third of the ops' nodes at least (torch 2.6 splits SDPA's backward into ~10 nodes)
    assert len(linked) > (len(graph) - len(leaves)) // 3
    assert all(graph.nodes[n]["forward_op"] in labels for n in linked)
    # Every other node but a leaf's is inside one op: reached only from that op's nodes.
    for node_id, data in graph.nodes(data=True):
        if data["forward_op"] is None and data["grad_fn"] != "AccumulateGrad":
            op = data["within_op"]
            assert op in labels, node_id
            for parent in graph.predecessors(node_id):
                assert op in (graph.nodes[parent]["forward_op"], graph.nodes[parent]["within_op"])
    accumulate = [d for _, d in graph.nodes(data=True) if d["grad_fn"] == "AccumulateGrad"]
    received = {n for n, leaf in log.leaves.items() if leaf.received}
    assert {d["leaf"] for d in accumulate} == received


def test_rng_ends_as_after_an_untraced_step(stepped: dict[str, Any]) -> None:
    assert torch.equal(stepped["rng_plain"], stepped["rng_traced"])


class DetachedHead(nn.Module):
    """A real model plus an auxiliary head whose output is detached: the bug users hunt."""

    def __init__(self, body: nn.Module, width: int) -> None:
        super().__init__()
        self.body = body
        self.aux = nn.Linear(width, width)

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        hidden = tensor_leaves(self.body(*args, **kwargs))[0]
        return hidden + self.aux(hidden).detach()


def test_a_detached_branch_leaves_its_parameters_without_gradient() -> None:
    case = build("gpt2")
    width = tensor_leaves(case.model(*case.args, **case.kwargs))[0].shape[-1]
    model = DetachedHead(case.model, width).train()
    log = lw.trace(model, case.args, case.kwargs, backward=loss_of)
    for name in ("aux.weight", "aux.bias"):
        assert log.leaves[name].kind == "param"
        assert not log.leaves[name].received, name
        assert log.leaves[name].grad is None
    assert log.leaves["body.transformer.wte.weight"].received
