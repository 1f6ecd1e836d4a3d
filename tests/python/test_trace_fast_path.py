"""Calls with shapes, dims and indices as arguments (view((4, 8)), permute([1, 0]),
x[..., :2], sum(dim=(0, 1))), torch's Python wrappers that pass tensors by keyword
(F.layer_norm) and random calls take the recorder's fast path, and record exactly what the
careful path records for them."""

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


class Random(nn.Module):
    """Dropout three ways, attention with the module's dropout, and a plain random draw."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(x)
        x = F.dropout(x, 0.2, training=self.training) + torch.dropout(x, 0.1, self.training)
        q = x.view(1, 2, 4, 8)
        p = 0.5 if self.training else 0.0
        x = F.scaled_dot_product_attention(q, q, q, dropout_p=p).view(8, 8)
        return x + torch.rand_like(x)


class Norms(nn.Module):
    """Norms with running statistics: they write them in training only."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.inorm = nn.InstanceNorm2d(4, track_running_stats=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(self.bn(self.conv(x)))


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
@pytest.mark.parametrize("case", ["shapes", "random", "norms"])
def test_the_fast_path_records_what_the_careful_path_records(monkeypatch, save, case):
    torch.manual_seed(0)
    if case == "shapes":
        model, x = Shapes().eval(), torch.randn(64)
    elif case == "norms":  # in eval: the norms read their running statistics only
        model, x = Norms().eval(), torch.randn(2, 3, 6, 6)
    else:  # in training: every random call draws
        model, x = Random().train(), torch.randn(8, 8)
    calls = _careful_calls(monkeypatch)
    torch.manual_seed(1)
    fast = lw.trace(model, x, save=save)
    assert calls == []
    torch.manual_seed(1)  # the same draws
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
    assert _rng_kept(fast) == _rng_kept(careful)
    if save == "all":
        report = fast.validate()  # raises on a replay that differs
        assert report.checked == len(fast.ops) and not report.skipped


def _rng_kept(log: lw.ModelLog) -> list[str]:
    """The functions of the ops that kept the RNG state before them, in order."""
    return [op.func for op in log.ops if op.replay[0].rng_state is not None]


def test_random_calls_keep_the_rng_state_only_when_they_draw(monkeypatch):
    """Random calls take the fast path; dropout in eval mode and attention without dropout
    draw nothing, so no RNG state is kept for them. In training they keep it, and replay."""
    calls = _careful_calls(monkeypatch)
    model, x = Random(), torch.randn(8, 8)
    log = lw.trace(model.eval(), x, save="all")
    assert calls == []
    assert _rng_kept(log) == ["rand_like"]
    assert len([op for op in log.ops if op.func == "dropout"]) == 3
    assert log.validate().checked == len(log.ops)
    log = lw.trace(model.train(), x, save="all")
    assert calls == []
    assert _rng_kept(log) == ["dropout"] * 3 + ["scaled_dot_product_attention", "rand_like"]
    report = log.validate()  # raises where a replay differs: each draw replays its RNG state
    assert report.checked == len(log.ops) and not report.skipped
    assert _rng_kept(lw.trace(model, x, save=None)) == []


def test_norms_updating_running_statistics_take_the_careful_path(monkeypatch):
    """In training the norms write their running statistics: the careful path copies saved
    values of them first (an earlier op's saved running_mean keeps its value)."""
    model = Norms().train()
    calls = _careful_calls(monkeypatch)
    log = lw.trace(model, torch.randn(2, 3, 6, 6))
    assert calls == ["add_", "batch_norm", "instance_norm"]  # add_: num_batches_tracked
    assert torch.equal(log["bn.running_mean"].activation, torch.zeros(4))
    assert not torch.equal(model.bn.running_mean, torch.zeros(4))
