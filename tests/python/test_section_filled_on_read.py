"""A traced section (``lw.tracing``, with or without ``grads=True``) leaves its records'
fill to the first read of its log when nothing reads them as it ends: the log read is the
one filled at once, field by field, whichever of its fields is read first."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import lens_widget as lw
from lens_widget.capture.features import Feature
from lens_widget.capture.tracing import Tracing
from lens_widget.log.filled_on_read import _LATER  # the fill left for the first read
from lens_widget.log.model_log import ModelLog
from tests.python.log_equality import assert_same_log


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.fc(x)) + x)


class _Net(nn.Module):
    """A layer run twice (its first pass relabelled ``:1``), a checkpointed block
    (recomputed in backward), a helper function and a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.block = _Block()
        self.shared = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)
        self.register_buffer("scale", torch.tensor(0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        h = checkpoint(self.block, h, use_reentrant=False)
        h = self.shared(torch.tanh(self.shared(h)))
        return self.head(_gate(h) * self.scale)


def _gate(h: torch.Tensor) -> torch.Tensor:
    return h * torch.sigmoid(h)


class _ReadsNothing(Feature):
    """No hook: attached, it keeps the section from leaving its fill for later."""


def _section(
    model: nn.Module, x: torch.Tensor, *, grads: bool, at_once: bool, save: str | None
) -> ModelLog:
    features = [_ReadsNothing()] if at_once else []
    tracing = Tracing(
        (model,), {}, save=save, grads=grads, timing=False, intervene=None, features=features
    )
    with tracing:
        out = model(x)
        loss = out.pow(2).mean() + out.abs().mean()
        if grads:
            loss.backward(retain_graph=True)
            torch.autograd.grad(out.sum(), [x])  # a second pass
    return tracing.log


def _pair(grads: bool, save: str | None = "all") -> tuple[ModelLog, ModelLog]:
    """The same section traced twice: its fill left for later, and done at once."""
    torch.manual_seed(0)
    model = _Net()
    x = torch.randn(3, 4, requires_grad=grads)
    twin, twin_x = copy.deepcopy(model), x.detach().clone().requires_grad_(grads)
    later = _section(model, x, grads=grads, at_once=False, save=save)
    at_once = _section(twin, twin_x, grads=grads, at_once=True, save=save)
    assert _LATER in later.__dict__ and _LATER not in at_once.__dict__
    later.elapsed = at_once.elapsed  # the one field that differs between two runs
    return later, at_once


@pytest.mark.parametrize(("grads", "save"), [(True, "all"), (True, None), (False, "all")])
def test_a_section_filled_on_its_first_read_is_the_one_filled_at_once(
    grads: bool, save: str | None
) -> None:
    later, at_once = _pair(grads, save)
    assert_same_log(at_once, later)
    assert _LATER not in later.__dict__
    assert any(op.label.endswith(":1") for op in later.ops)  # relabelled on the read
    assert "" in later.modules and next(iter(later.modules)) == ""
    if grads:
        assert later.recomputed and len(later.backward_passes) == 2
        assert later.leaves["input.0"].grads[0] is not None
        assert later.leaves["input.0"].label == "input.0"


@pytest.mark.parametrize("first", ["leaves", "backward_passes", "backward_graph", "recomputed"])
def test_any_gradient_field_read_first_fills_the_whole_log(first: str) -> None:
    later, at_once = _pair(grads=True)
    getattr(later, first)
    assert _LATER not in later.__dict__
    assert_same_log(at_once, later)


def test_a_section_read_after_the_model_changed_tells_of_the_step() -> None:
    torch.manual_seed(0)
    model = _Net()
    x = torch.randn(3, 4)
    with lw.tracing(model, grads=True) as t:
        model(x).pow(2).mean().backward()
    log = t.log
    assert _LATER in log.__dict__
    model.embed.weight = nn.Parameter(torch.zeros(5, 4))  # replaced before the first read
    assert log.leaves["embed.weight"].shape == (8, 4)
    assert log.leaves["embed.weight"].grads[0].shape == (8, 4)
    assert log["embed.weight"].shape == (8, 4)


def test_a_section_that_raised_is_filled_as_it_ends() -> None:
    torch.manual_seed(0)
    model = _Net()
    with pytest.raises(ValueError), lw.tracing(model, grads=True) as t:
        model(torch.randn(3, 4)).sum().backward()
        raise ValueError("stop")
    assert _LATER not in t.log.__dict__ and t.log.leaves


def test_the_fill_left_for_later_holds_no_autograd_node() -> None:
    """The step lets go of the autograd graph as it ends, as when it fills at once."""
    import gc
    import types

    from torch.autograd.graph import Node

    # (code and modules lead out of the log, to everything the process holds)
    outside = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)
    later, _ = _pair(grads=True)
    seen, layer = set(), [later.__dict__[_LATER]]
    for _ in range(10):
        found = [ref for obj in layer for ref in gc.get_referents(obj)]
        assert not any(isinstance(ref, Node) for ref in found)
        layer = [ref for ref in found if id(ref) not in seen and not isinstance(ref, outside)]
        seen.update(map(id, layer))
    assert len(seen) > 100  # it did reach the records, tensors and gradients
