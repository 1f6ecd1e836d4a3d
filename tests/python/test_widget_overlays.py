"""The kernel side of the widget's overlays and comparisons: "metrics", "firstNonfinite" and
the activation request's `side`, answered from real traces."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget


class Planted(nn.Module):
    """Finite until log(h - 10), which makes the NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(torch.log(h - 10)) * 2


def values_of(reply: dict, buffers: list) -> dict[str, float]:
    assert reply["ok"], reply
    values = np.frombuffer(buffers[0], "<f4")
    ids = reply["result"]["ids"]
    assert len(ids) == len(values)
    return dict(zip(ids, values.tolist(), strict=True))


@pytest.fixture(scope="module")
def mlp_log():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    return lw.trace(model, torch.randn(5, 8))


def test_metrics_give_every_op_its_value_in_id_order(mlp_log):
    w = LensWidget.from_log(mlp_log)
    flops = values_of(*ask(w, "metrics", {"metric": "flops"}))
    assert list(flops) == [op.label for op in mlp_log.ops]
    assert flops["linear_1_1"] == mlp_log["linear_1_1"].flops == 2 * 5 * 8 * 16
    assert flops["relu_1_2"] == 5 * 16  # elementwise: one per output element
    params = values_of(*ask(w, "metrics", {"metric": "params"}))
    assert params["linear_2_3"] == 16 * 4 + 4
    absmax = values_of(*ask(w, "metrics", {"metric": "absmax"}))
    expected = mlp_log["relu_1_2"].activation.abs().max().item()
    assert absmax["relu_1_2"] == pytest.approx(expected, rel=1e-6)
    zeros = values_of(*ask(w, "metrics", {"metric": "zeroFraction"}))
    assert zeros["relu_1_2"] == pytest.approx((mlp_log["relu_1_2"].activation == 0).float().mean())
    reply, _ = ask(w, "metrics", {"metric": "time"})  # not timed: why, not a grey graph
    assert not reply["ok"] and "trace with timing=True" in reply["error"]


def test_bad_metric_requests_are_error_replies(mlp_log):
    w = LensWidget.from_log(mlp_log)
    reply, _ = ask(w, "metrics", {"metric": "bogus"})
    assert not reply["ok"] and "unknown metric 'bogus'" in reply["error"]
    reply, _ = ask(w, "metrics", {"metric": "relL2"})
    assert not reply["ok"] and "needs a comparison" in reply["error"]
    reply, _ = ask(w, "metrics", {"metric": "device"})  # the frontend's own, from the payload
    assert not reply["ok"] and "colored by the frontend" in reply["error"]
    reply, _ = ask(w, "metrics", {"metric": 3})
    assert not reply["ok"] and "metric must be a string" in reply["error"]
    reply, _ = ask(w, "metrics", {})
    assert not reply["ok"] and "missing params: metric" in reply["error"]
    reply, _ = ask(w, "activation", {"id": "relu_1_2", "side": "b"})
    assert not reply["ok"] and "needs a comparison" in reply["error"]


def test_nonfinite_metric_and_first_nonfinite_request():
    torch.manual_seed(0)
    log = lw.trace(Planted(), torch.randn(3, 4))
    w = LensWidget.from_log(log)
    flags = values_of(*ask(w, "metrics", {"metric": "nonfinite"}))
    assert [k for k, v in flags.items() if v == 1.0] == ["log_1_4", "linear_2_5", "mul_1_6"]
    assert flags["relu_1_2"] == 0.0
    reply, buffers = ask(w, "firstNonfinite", {})
    assert reply["ok"] and reply["result"] == {"id": "log_1_4"} and buffers == []
    finite = LensWidget.from_log(lw.trace(nn.Linear(2, 2), torch.randn(1, 2)))
    assert ask(finite, "firstNonfinite", {})[0]["result"] == {"id": None}
    unsaved = LensWidget.from_log(lw.trace(Planted(), torch.randn(3, 4), save=None))
    reply, _ = ask(unsaved, "firstNonfinite", {})
    assert not reply["ok"] and "save=None" in reply["error"]
    reply, _ = ask(w, "firstNonfinite", {"x": 1})
    assert not reply["ok"] and "unknown params" in reply["error"]


class Branchy(nn.Module):
    """The op count depends on the input: a run on a negative input has one op more."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if x.sum() < 0:
            y = y * 3
        return torch.tanh(y)


def test_compare_widget_colors_by_difference_and_plots_both_sides():
    torch.manual_seed(0)
    model = Branchy()
    x = torch.rand(2, 4)
    a, b = lw.trace(model, x), lw.trace(model, -x)
    w = LensWidget.compare(a, b)
    assert w.model_log is a and w.comparison is not None
    # labels count layers overall: after B's extra mul, its tanh is another layer than A's
    assert w.graph["compare"] == {"onlyA": ["tanh_1_4"], "onlyB": ["mul_1_4", "tanh_1_5"]}
    cmp = lw.compare(a, b)
    rel = values_of(*ask(w, "metrics", {"metric": "relL2"}))
    assert rel["linear_1_1"] == pytest.approx(cmp["linear_1_1"].rel_l2, rel=1e-6)
    assert rel["linear_1_1"] > 0
    cosine = values_of(*ask(w, "metrics", {"metric": "cosine"}))
    assert cosine["linear_1_1"] == pytest.approx(cmp["linear_1_1"].cosine, rel=1e-6)
    reply_a, buf_a = ask(w, "activation", {"id": "linear_1_1"})
    reply_b, buf_b = ask(w, "activation", {"id": "linear_1_1", "side": "b"})
    reply_d, buf_d = ask(w, "activation", {"id": "linear_1_1", "side": "diff"})
    assert reply_a["ok"] and reply_b["ok"] and reply_d["ok"], (reply_b, reply_d)
    plot_a, plot_b, plot_d = (np.frombuffer(b[0], "<f4") for b in (buf_a, buf_b, buf_d))
    np.testing.assert_allclose(plot_a.reshape(2, 4), a["linear_1_1"].activation.numpy())
    np.testing.assert_allclose(plot_b.reshape(2, 4), b["linear_1_1"].activation.numpy())
    np.testing.assert_allclose(plot_d, plot_a - plot_b, rtol=1e-5, atol=1e-6)
    reply, _ = ask(w, "activation", {"id": "linear_1_1", "side": "sideways"})
    assert not reply["ok"] and "side must be one of" in reply["error"]


def test_compare_widget_marks_ops_of_one_side_and_refuses_their_other_side():
    torch.manual_seed(0)
    model = Branchy()
    x = torch.rand(2, 4)
    w = LensWidget.compare(lw.trace(model, -x), lw.trace(model, x))
    assert w.graph["compare"] == {"onlyA": ["mul_1_4", "tanh_1_5"], "onlyB": ["tanh_1_4"]}
    diffs = values_of(*ask(w, "metrics", {"metric": "maxAbs"}))
    assert math.isnan(diffs["mul_1_4"]) and diffs["linear_1_1"] > 0
    reply, _ = ask(w, "activation", {"id": "mul_1_4", "side": "diff"})
    assert not reply["ok"] and "ran only in A" in reply["error"]


def test_compare_widget_shows_b_side_of_inputs_parameters_and_outputs():
    """The comparison matches ops; an input, a parameter or an output sink is in both runs
    under one label, and the inspector's B and A−B show B's (it said "ran only in A")."""
    torch.manual_seed(0)
    model = Branchy()
    x = torch.rand(2, 4)
    a, b = lw.trace(model, x), lw.trace(model, x * 2)
    w = LensWidget.compare(a, b)
    for label, want_b in [
        ("input.0", x * 2),
        ("fc.weight", model.fc.weight.detach()),
        ("output", b.output.detach()),
    ]:
        reply_b, buf_b = ask(w, "activation", {"id": label, "side": "b"})
        reply_d, buf_d = ask(w, "activation", {"id": label, "side": "diff"})
        assert reply_b["ok"] and reply_d["ok"], (label, reply_b, reply_d)
        plot_b = np.frombuffer(buf_b[0], "<f4").reshape(want_b.shape)
        np.testing.assert_allclose(plot_b, want_b.numpy(), rtol=1e-6)
        want_d = (a[label].activation.double() - want_b.double()).numpy()
        np.testing.assert_allclose(np.frombuffer(buf_d[0], "<f4"), want_d.ravel(), atol=1e-6)
