"""Errors users hit in backward, and gradient checkpointing, inside a traced step."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from cleanup_checks import captures_alive
from torch import nn
from torch.utils.checkpoint import checkpoint

import lens_widget as lw


class ExpNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).exp()  # exp saves its result for backward


def traced_error(backward: Any) -> tuple[RuntimeError, lw.ModelLog]:
    torch.manual_seed(0)
    model, x = ExpNet(), torch.randn(2, 3)
    with pytest.raises(RuntimeError) as caught:
        lw.trace(model, (x,), backward=backward)
    log = lw.partial_log(caught.value)
    assert log is not None and log.error is not None
    # a built-in exception class takes no weak reference: the log names it by a copy
    assert type(log.error) is RuntimeError and str(log.error) == str(caught.value)
    return caught.value, log


def test_backward_through_freed_graph_names_the_op_and_the_pass_that_freed_it() -> None:
    def twice(out: torch.Tensor) -> None:
        loss = out.sum()
        loss.backward()
        loss.backward()  # the first pass freed exp's saved result

    err, log = traced_error(twice)
    assert "second time" in str(err)
    first, second = log.backward_passes
    assert first.error is None and not first.retain_graph
    assert second.error is not None and "second time" in second.error
    assert second.error_op == log["fc"].children[0] == "exp_1_2"
    assert second.error_source.endswith(f"{__file__.rsplit('/', 1)[-1]}:{_line_of('exp()')}")
    assert second.freed_by == 1
    assert log.leaves["fc.weight"].grads[0] is not None  # pass 1 completed
    # the note on the error says how many ops ran, not that "the forward pass" raised
    assert err.__notes__[-1] == (
        f"lens_widget: raised after {len(log.ops)} recorded ops; the partial log is at err.lens_log"
    )


def test_inplace_modification_names_the_op_that_saved_and_the_one_that_wrote() -> None:
    def write_then_backward(out: torch.Tensor) -> torch.Tensor:
        out.add_(1)
        return out.sum()

    err, log = traced_error(write_then_backward)
    assert "modified by an inplace operation" in str(err)
    (failed,) = log.backward_passes
    assert failed.error_op == "exp_1_2"
    assert failed.inplace_op is not None and log[failed.inplace_op].func == "add_"


def test_anomaly_mode_nan_names_the_forward_op_whose_backward_returned_nan() -> None:
    def nan_gradient(out: torch.Tensor) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autograd.detect_anomaly():
                (out * 0).sqrt().sum().backward()  # sqrt'(0) = inf, times 0: NaN

    err, log = traced_error(nan_gradient)
    assert "returned nan values" in str(err)
    (failed,) = log.backward_passes
    assert "MulBackward0" in (failed.error or "")
    assert log[failed.error_op].func in ("mul", "__mul__")
    assert log[failed.error_op].parents == ["exp_1_2"]


def test_a_backward_that_raises_leaves_no_hook_behind() -> None:
    def twice(out: torch.Tensor) -> None:
        loss = out.sum()
        loss.backward()
        loss.backward()

    before = captures_alive()
    traced_error(twice)
    assert captures_alive() == before


def _line_of(text: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if text in line and "return" in line)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) * 2


class Checkpointed(nn.Module):
    def __init__(self, reentrant: bool) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.shared = Block()
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=self.reentrant)
        for _ in range(2):  # one module checkpointed twice: passes must match in order
            x = checkpoint(self.shared, x, use_reentrant=self.reentrant)
        return x


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointed_ops_are_marked_recomputed_not_new_layers(reentrant: bool) -> None:
    torch.manual_seed(0)
    model, x = Checkpointed(reentrant), torch.randn(2, 4, requires_grad=True)
    module_grads: dict[str, list[torch.Tensor]] = {}

    def keep(name: str) -> Any:
        def hook(_m: nn.Module, _a: Any, out: torch.Tensor) -> None:
            if torch.is_grad_enabled() and out.requires_grad:
                out.register_hook(lambda g: module_grads.setdefault(name, []).insert(0, g))

        return hook

    handles = [m.register_forward_hook(keep(n)) for n, m in model.named_modules() if n]
    model(x).pow(2).sum().backward()
    for handle in handles:
        handle.remove()
    plain = {n: p.grad.clone() for n, p in model.named_parameters()}
    plain_x = x.grad.clone()
    model.zero_grad(set_to_none=True)
    x.grad = None

    log = lw.trace(model, (x,), backward=lambda out: out.pow(2).sum())
    assert {a: m.n_passes for a, m in log.modules.items()} == {
        "": 1, "blocks.0": 1, "blocks.0.fc": 1, "blocks.1": 1, "blocks.1.fc": 1,
        "shared": 2, "shared.fc": 2,
    }  # fmt: skip
    assert len(log.ops) == 14  # 4 regions x 3 ops, then the loss
    recomputed = [r.op for r in log.recomputed]
    assert recomputed, "nothing marked as recomputed"
    assert all(r in log.by_label and r.startswith(("linear", "tanh", "mul")) for r in recomputed)
    assert len(set(recomputed)) == len(recomputed)  # each forward op recomputed at most once
    linears = {r for r in recomputed if r.startswith("linear")}
    assert linears == {"linear_1_1", "linear_2_4", "linear_3_7:1", "linear_3_7:2"}
    assert all(r.backward_pass == 1 for r in log.recomputed)
    for name, grad in plain.items():
        assert torch.equal(model.get_parameter(name).grad, grad), name
        assert torch.equal(log.leaves[name].grad, grad), name
    assert torch.equal(x.grad, plain_x) and torch.equal(log["input.0"].grad, plain_x)
    for name, grads in module_grads.items():
        for k, grad in enumerate(grads, 1):
            key = f"{name}:{k}" if len(grads) > 1 else name
            assert torch.equal(log[key].grad, grad), key


class RegionOfItsOwn(nn.Module):
    """A checkpointed method whose own ops (relu, mul) sit in no submodule of the region."""

    def __init__(self, reentrant: bool | None) -> None:
        super().__init__()
        self.a, self.b, self.reentrant = nn.Linear(8, 8), nn.Linear(8, 8), reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.reentrant is None:  # not checkpointed: the reference
            return self.region(x)
        return checkpoint(self.region, x, use_reentrant=self.reentrant)

    def region(self, t: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(t).relu() * 3)


@pytest.mark.parametrize("reentrant", [True, False])
def test_a_regions_own_ops_are_matched_when_recomputed(reentrant: bool) -> None:
    """Rerun inside backward, the region's own ops have no module call above them, so their
    call path differs from forward's below the region: they still match (by the innermost
    call site) and their gradients reach the log, as without checkpointing."""
    x = torch.randn(3, 8, requires_grad=True)
    torch.manual_seed(0)
    log = lw.trace(RegionOfItsOwn(reentrant), (x,), backward=lambda out: out.sum())
    assert {"relu_1_2", "mul_1_3"} <= {r.op for r in log.recomputed}
    torch.manual_seed(0)
    plain = lw.trace(RegionOfItsOwn(None), (x,), backward=lambda out: out.sum())
    for label in ("relu_1_2", "mul_1_3"):
        assert log[label].grad is not None, label
        torch.testing.assert_close(log[label].grad, plain[label].grad)


def test_a_leaf_no_recorded_op_touched_says_so_in_its_name() -> None:
    """A reentrant checkpoint recomputes from a detached copy of its input: an autograd leaf
    made inside backward, which no recorded op made or read."""
    x = torch.randn(3, 8, requires_grad=True)
    log = lw.trace(RegionOfItsOwn(True), (x,), backward=lambda out: out.sum())
    leaf = log.leaves["unrecorded_leaf"]
    assert (leaf.kind, leaf.shape, leaf.label) == ("other", (3, 8), None)
    torch.testing.assert_close(leaf.grad, log["input.0"].grad)  # the gradient of that input
