"""Calls with shapes, dims and indices as arguments (view((4, 8)), permute([1, 0]),
x[..., :2], sum(dim=(0, 1))) and torch's Python wrappers that pass tensors by keyword
(F.layer_norm) take the recorder's fast path, and record exactly what the careful path
records for them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from log_equality import assert_same_nodes
from torch import nn
from torch.overrides import TorchFunctionMode

import lens_widget as lw
from lens_widget.capture.recorder import Recorder
from lens_widget.log.replay import TensorSlot


class Shapes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x.view((2, 4, 8)))  # F.layer_norm passes weight and bias by keyword
        x = x.permute([2, 0, 1]).reshape(x.shape)
        x = F.pad(x[..., :6], (1, 1)) + x[:, 1:2, None].sum(dim=(1, 2), keepdim=True)
        return F.layer_norm(x, [8], eps=1e-3) * torch.ones((2, 4, 8))


class PassThrough(TorchFunctionMode):
    """A user's mode around the trace: every call then takes the careful path."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        return func(*args, **(kwargs or {}))


def _careful_calls(monkeypatch) -> list[str]:
    calls: list[str] = []
    careful = Recorder._call_quietly

    def counted(self, facts, func, args, kwargs, frame):  # noqa: ANN001, ANN202
        calls.append(facts.name)
        return careful(self, facts, func, args, kwargs, frame)

    monkeypatch.setattr(Recorder, "_call_quietly", counted)
    return calls


def _template(value: object) -> object:
    """A replay template with its slots as ("slot", k): comparable across logs."""
    if isinstance(value, TensorSlot):
        return ("slot", value.index)
    if isinstance(value, (tuple, list)):
        return type(value)(_template(v) for v in value)
    if isinstance(value, dict):
        return {k: _template(v) for k, v in value.items()}
    return value


def test_shape_and_keyword_tensor_calls_take_the_fast_path(monkeypatch):
    calls = _careful_calls(monkeypatch)
    log = lw.trace(Shapes().eval(), torch.randn(64))
    assert calls == []
    assert {"view", "permute", "reshape", "layer_norm", "getitem", "pad", "sum", "ones"} <= {
        op.func.strip("_") for op in log.ops
    }
    norm = next(op for op in log.ops if op.module == "norm")
    assert [a.position for a in norm.parent_args] == ["0", "weight", "bias"]
    assert [p.name for p in norm.params] == ["norm.weight", "norm.bias"]


@pytest.mark.parametrize("save", ["all", None])
def test_the_fast_path_records_what_the_careful_path_records(monkeypatch, save):
    torch.manual_seed(0)
    model, x = Shapes().eval(), torch.randn(64)
    calls = _careful_calls(monkeypatch)
    fast = lw.trace(model, x, save=save)
    assert calls == []
    with PassThrough():
        careful = lw.trace(model, x, save=save)
    assert len(calls) == len(careful.ops)  # every op went the careful way
    assert_same_nodes(fast, careful)
    for a, b in zip(fast.nodes, careful.nodes, strict=True):
        if a.kind == "op":
            (call_a, refs_a), (call_b, refs_b) = a.replay, b.replay
            assert call_a.func is call_b.func, a.label
            assert _template(call_a.args) == _template(call_b.args), a.label
            assert _template(dict(call_a.kwargs)) == _template(dict(call_b.kwargs)), a.label
            assert [(p, n.label, i) for p, n, i in refs_a] == [
                (p, n.label, i) for p, n, i in refs_b
            ], a.label
    if save == "all":
        report = fast.validate()  # raises on a replay that differs
        assert report.checked == len(fast.ops) and not report.skipped
