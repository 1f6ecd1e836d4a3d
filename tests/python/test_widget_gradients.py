"""The kernel side of the widget's gradient views: the payload's `gradients`, the activation
request's `value: "grad"` / `backwardPass`, and the `gradNorm` / `gradNonfinite` metrics,
on logs whose gradients are real (gradient_fixture.py: `lw.trace(..., backward=...)`)."""

import math

import numpy as np
import pytest
import torch
from gradient_fixture import CutOff, squared_mean, traced_with_grads
from torch import nn
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget import wire
from lens_widget.widget.lens_widget import LensWidget


class SqrtAtZero(nn.Module):
    """sqrt(relu(.)) has an infinite derivative where the relu is 0: the gradient goes Inf/NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.head = nn.Linear(4, 8), nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.sqrt(torch.relu(self.fc(x))))


@pytest.fixture(scope="module")
def cut_log():
    torch.manual_seed(0)
    return traced_with_grads(CutOff(4, 8, 3), torch.randn(3, 4))


@pytest.fixture(scope="module")
def two_pass_log():
    torch.manual_seed(0)
    return traced_with_grads(CutOff(4, 8, 3), torch.randn(3, 4), losses=(squared_mean, torch.sum))


def grad_values(reply: dict, buffers: list) -> np.ndarray:
    assert reply["ok"], reply
    return np.frombuffer(buffers[0], "<f4")


def test_payload_lists_leaves_without_gradient_first_and_the_backward_nodes(cut_log):
    payload = LensWidget.from_log(cut_log).graph
    info = payload["gradients"]
    leaves = [(leaf["name"], leaf["received"]) for leaf in info["leaves"]]
    assert leaves[:2] == [("aux.weight", False), ("aux.bias", False)]
    assert all(received for _, received in leaves[2:]) and len(leaves) == 6
    assert info["leaves"][0]["label"] == "aux.weight" and info["leaves"][0]["kind"] == "param"
    assert info["leaves"][0]["shape"] == [8, 4] and info["leaves"][0]["passes"] == []
    assert info["leaves"][-1]["passes"] == [1]
    # no gradient reached the cut-off branch (nor the input, which needs none)
    assert {"aux.weight", "aux.bias", "linear_2_3", "detach_1_4"} <= set(info["noGrad"])
    assert not {"linear_1_1", "relu_1_2", "add_1_5", "linear_3_6"} & set(info["noGrad"])
    (first,) = info["passes"]
    assert first["index"] == 1 and first["error"] is None
    backward = info["backward"]
    assert [n["order"] for n in backward] == sorted(n["order"] for n in backward)
    by_id = {n["id"]: n for n in backward}
    assert first["nodes"] == [n["id"] for n in backward]  # one pass ran every node, in order
    linear = next(n for n in backward if n["forwardOp"] == "linear_3_6")
    assert linear["gradFn"] == "AddmmBackward0" and linear["gradShapes"] == ["3x3"]
    assert {by_id[n]["gradFn"] for n in linear["next"]} >= {"AddBackward0", "AccumulateGrad"}
    leaves_reached = {n["leaf"] for n in backward if n["gradFn"] == "AccumulateGrad"}
    assert leaves_reached == {"fc.weight", "fc.bias", "head.weight", "head.bias"}
    assert wire.decode(wire.encode(payload)) == payload  # travels as the graph trait does


def test_a_forward_only_log_has_no_gradients_in_the_payload():
    log = lw.trace(CutOff(4, 8, 3), torch.randn(3, 4))
    assert "gradients" not in LensWidget.from_log(log).graph


def test_the_gradient_view_plots_the_ops_gradient(cut_log):
    w = LensWidget.from_log(cut_log)
    reply, buffers = ask(w, "activation", {"id": "relu_1_2", "value": "grad"})
    result = reply["result"]
    assert result["shape"] == [3, 8] and result["plot"] == "heatmap"
    expected = cut_log["relu_1_2"].grad
    np.testing.assert_allclose(grad_values(reply, buffers), expected.flatten().numpy(), rtol=1e-6)
    assert result["stats"]["max"] == pytest.approx(float(expected.max()), rel=1e-6)
    # the activation is still there, and differs
    reply, buffers = ask(w, "activation", {"id": "relu_1_2"})
    act = cut_log["relu_1_2"].activation.flatten().numpy()
    np.testing.assert_allclose(grad_values(reply, buffers), act, rtol=1e-6)


def test_one_backward_pass_or_their_sum(two_pass_log):
    w = LensWidget.from_log(two_pass_log)
    op = two_pass_log["linear_1_1"]
    first, second = op.grads
    for params, expected in [
        ({"backwardPass": 1}, first),
        ({"backwardPass": 2}, second),
        ({}, first + second),
    ]:
        reply, buffers = ask(w, "activation", {"id": "linear_1_1", "value": "grad", **params})
        np.testing.assert_allclose(
            grad_values(reply, buffers), expected.flatten().numpy(), rtol=1e-5, atol=1e-7
        )
    assert not torch.allclose(first, second)
    assert len(w.graph["gradients"]["passes"]) == 2


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"id": "linear_2_3", "value": "grad"}, "no gradient reached this op"),
        ({"id": "aux.weight", "value": "grad"}, "no gradient reached this op"),
        ({"id": "linear_1_1", "value": "weights"}, "value must be one of activation, grad"),
        ({"id": "linear_1_1", "value": ["grad"]}, "value must be one of"),
        ({"id": "linear_1_1", "value": "grad", "backwardPass": 0}, "backwardPass 0 out of range"),
        ({"id": "linear_1_1", "value": "grad", "backwardPass": 2}, "has 1 backward pass "),
        ({"id": "linear_1_1", "value": "grad", "backwardPass": "1"}, "must be an integer"),
        ({"id": "linear_1_1", "value": "grad", "backwardPass": True}, "must be an integer"),
        ({"id": "linear_1_1", "backwardPass": 1}, "backwardPass goes with value 'grad'"),
        ({"id": "linear_1_1", "value": "grad", "side": "b"}, "gradients are shown for A only"),
        ({"id": "nope", "value": "grad"}, "unknown node id"),
    ],
)
def test_bad_gradient_requests_are_error_replies(cut_log, params, error):
    reply, buffers = ask(LensWidget.from_log(cut_log), "activation", params)
    assert reply["ok"] is False and error in reply["error"], reply
    assert buffers == []


def test_a_log_without_gradients_says_so():
    w = LensWidget.from_log(lw.trace(CutOff(4, 8, 3), torch.randn(3, 4)))
    reply, _ = ask(w, "activation", {"id": "linear_1_1", "value": "grad"})
    assert reply["ok"] is False and "kept no gradients" in reply["error"]
    reply, _ = ask(w, "metrics", {"metric": "gradNorm"})
    assert reply["ok"] is False and "needs a log with gradients" in reply["error"]


def test_an_input_that_wants_no_gradient_says_so_in_a_log_with_gradients(cut_log):
    reply, _ = ask(LensWidget.from_log(cut_log), "activation", {"id": "input.0", "value": "grad"})
    assert reply["ok"] is False
    assert reply["error"] == "no gradient: the input input.0 does not require grad"


def test_grad_norm_is_the_l2_norm_of_each_ops_summed_gradient(two_pass_log):
    w = LensWidget.from_log(two_pass_log)
    reply, buffers = ask(w, "metrics", {"metric": "gradNorm"})
    assert reply["ok"] and reply["result"]["metric"] == "gradNorm"
    values = dict(zip(reply["result"]["ids"], grad_values(reply, buffers).tolist(), strict=True))
    assert list(values) == [op.label for op in two_pass_log.ops]
    for label in ("linear_1_1", "relu_1_2", "add_1_5", "linear_3_6"):
        grad = sum(two_pass_log[label].grads)
        assert values[label] == pytest.approx(float(torch.linalg.vector_norm(grad)), rel=1e-5)
    assert math.isnan(values["linear_2_3"]) and math.isnan(values["detach_1_4"])  # none reached


def test_each_leaf_carries_its_gradient_norm_summed_over_passes(two_pass_log):
    leaves = {
        leaf["name"]: leaf
        for leaf in LensWidget.from_log(two_pass_log).graph["gradients"]["leaves"]
    }
    for name, record in two_pass_log.leaves.items():
        if record.received:
            want = float(torch.linalg.vector_norm(sum(g for g in record.grads if g is not None)))
            assert leaves[name]["gradNorm"] == pytest.approx(want, rel=1e-6)
        else:
            assert leaves[name]["gradNorm"] is None
    assert leaves["aux.weight"]["gradNorm"] is None and leaves["fc.weight"]["gradNorm"] > 0


class SqrtOfZeroParam(nn.Module):
    """d sqrt(s)/ds at s = 0 is Inf: the parameter `s` gets an Inf gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.s, self.fc = nn.Parameter(torch.zeros(4)), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x * torch.sqrt(self.s))


def test_a_leaf_whose_gradient_holds_nan_or_inf_has_no_norm():
    torch.manual_seed(0)
    log = traced_with_grads(SqrtOfZeroParam(), torch.randn(3, 4))
    leaves = {leaf["name"]: leaf for leaf in LensWidget.from_log(log).graph["gradients"]["leaves"]}
    s = log.leaves["s"]
    assert s.received and not bool(torch.isfinite(s.grad).all())
    assert leaves["s"]["received"] and leaves["s"]["gradNorm"] is None
    assert leaves["fc.bias"]["gradNorm"] > 0  # finite


def test_grad_nonfinite_marks_ops_whose_gradient_holds_nan_or_inf():
    torch.manual_seed(0)
    log = traced_with_grads(SqrtAtZero(), torch.randn(4, 4))
    assert bool((log["relu_1_2"].activation == 0).any())  # sqrt'(0) is Inf there
    reply, buffers = ask(LensWidget.from_log(log), "metrics", {"metric": "gradNonfinite"})
    flags = dict(zip(reply["result"]["ids"], grad_values(reply, buffers).tolist(), strict=True))
    expected = {op.label: float(not torch.isfinite(op.grad).all()) for op in log.ops}
    assert flags == expected
    assert flags["sqrt_1_3"] == 0.0 and flags["linear_2_4"] == 0.0  # downstream of the sqrt
    assert flags["relu_1_2"] == 1.0  # Inf where the relu output is 0
    assert flags["linear_1_1"] == 0.0  # relu's backward writes 0 where its input was <= 0


def test_a_sparse_gradient_is_plotted_dense():
    """nn.Embedding(sparse=True) gets a sparse COO .grad: clicking it raised torch's
    'aten::as_strided ... SparseCPU' error."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 4, sparse=True), nn.Flatten(), nn.Linear(12, 1))
    log = lw.trace(model.train(), torch.tensor([[1, 2, 2]]), backward=lambda out: out.sum())
    grad = log["0.weight"].grad
    assert grad.layout == torch.sparse_coo
    widget = LensWidget.from_log(log)
    reply, buffers = ask(widget, "activation", {"id": "0.weight", "value": "grad"})
    result = reply["result"]
    assert result["shape"] == [10, 4] and "sparse_coo shown dense" in result["note"]
    np.testing.assert_allclose(grad_values(reply, buffers), grad.to_dense().flatten().numpy())
