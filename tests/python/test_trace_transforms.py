"""torch.func transforms (vmap, grad) inside a traced forward: the ops inside are linked to
the tensors they read, no value that only exists inside the transform is kept, and the log
prints, validates, saves and answers the widget like any other."""

from __future__ import annotations

import json

import torch
import torch.autograd.forward_ad as fwAD
from log_equality import assert_same_log
from torch import nn

import lens_widget as lw
from lens_widget.capture.recorder import Recorder
from lens_widget.log.records import IN_TRANSFORM_NO_VALUES
from lens_widget.widget.requests import RequestError

_is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


class VmapInForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        z = torch.func.vmap(lambda row: row.sin() * 2 + row.sum())(y)
        return z + 1


class GradInForward(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.func.grad(lambda t: (t.sin() ** 2).sum())(x)
        return x * g


def _saved_tensors(log: lw.ModelLog) -> list[torch.Tensor]:
    return [t for n in log.nodes for t in n.activations or ()]


def test_ops_inside_vmap_are_linked_and_keep_no_batched_value(tmp_path):
    x = torch.randn(3, 4)
    model = VmapInForward()
    log = lw.trace(model, x)
    assert [(op.func, op.parents) for op in log.ops] == [
        ("linear", ["input.0", "lin.weight", "lin.bias"]),
        ("sin", ["linear_1_1"]),  # the tensor inside vmap's batched input
        ("mul", ["sin_1_2"]),
        ("sum", ["linear_1_1"]),
        ("add", ["mul_1_3", "sum_1_4"]),
        ("add", ["add_1_5"]),  # vmap's result is the tensor under the last op's output
    ]
    assert not [n for n in log.nodes if n.kind == "const"]
    assert log["sin_1_2"].shape == (4,)  # what the op saw: one sample
    inside = _INSIDE_VMAP
    assert all(not log[label].saved for label in inside)
    assert not any(_is_wrapped(t) for t in _saved_tensors(log))
    torch.testing.assert_close(log["add_2_6"].activation, model(x))

    report = log.validate()
    assert report.checked == 1 and set(report.skipped) == {*inside, "add_2_6"}
    assert "sin_1_2" in str(log)  # prints (the summary reads every saved tensor)
    log.save(tmp_path / "vmap")
    assert_same_log(log, lw.load(tmp_path / "vmap"))


def test_func_grad_inside_forward_keeps_no_tracking_value(tmp_path):
    x = torch.randn(5)
    log = lw.trace(GradInForward(), x)
    assert "sin" in [op.func for op in log.ops]
    assert not any(_is_wrapped(t) for t in _saved_tensors(log))
    torch.testing.assert_close(log.output, x * torch.sin(2 * x))
    str(log)
    log.validate()
    log.save(tmp_path / "grad")
    assert_same_log(log, lw.load(tmp_path / "grad"))


_INSIDE_VMAP = ["sin_1_2", "mul_1_3", "sum_1_4", "add_1_5"]


def test_ops_inside_a_transform_say_why_they_have_no_values(tmp_path):
    """Not "not saved, re-run to save it": a re-run would keep nothing either. The reason
    is on the record, in validate's report and in the widget's payload, also after loading."""
    log = lw.trace(VmapInForward(), torch.randn(3, 4))
    assert [n.label for n in log.nodes if n.no_values] == _INSIDE_VMAP
    report = log.validate()
    assert {report.skipped[label] for label in _INSIDE_VMAP} == {IN_TRANSFORM_NO_VALUES}
    log.save(tmp_path / "vmap")
    loaded = lw.load(tmp_path / "vmap")
    assert [n.label for n in loaded.nodes if n.no_values] == _INSIDE_VMAP
    payload = lw.LensWidget.from_log(loaded)._payload
    reasons = {n["id"]: n["noValues"] for n in payload["unrolled"]["nodes"]}
    assert {k for k, v in reasons.items() if v} == set(_INSIDE_VMAP)


class _Double(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @staticmethod
    def setup_context(ctx: object, inputs: object, output: object) -> None:
        pass

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        return grad * 2


class _VmappedFunction(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.vmap(_Double.apply)(x) + 1


def test_an_op_a_loaded_log_cannot_call_still_says_it_ran_in_a_transform(tmp_path):
    """An autograd.Function under vmap (transformers 4.57's masks) records as
    custom_function_call, which no loaded log calls: loading keeps why it has no values
    (format version 7), so validate's report is the same before and after."""
    log = lw.trace(_VmappedFunction(), torch.randn(3, 4))
    inside = [n.label for n in log.nodes if n.no_values]
    assert [log[label].func for label in inside] == ["custom_function_call"]
    loaded = lw.load(log.save(tmp_path / "fn"))
    assert [n.label for n in loaded.nodes if n.no_values] == inside
    assert loaded.validate().skipped == log.validate().skipped
    assert json.loads((tmp_path / "fn" / "log.json").read_text())["version"] == 7


def test_the_widget_answers_for_every_node_of_a_vmap_trace():
    log = lw.trace(VmapInForward(), torch.randn(3, 4))
    widget = lw.LensWidget.from_log(log)
    for node in log.nodes:
        if node.saved:
            widget._activation({"id": node.label})
        else:
            try:
                widget._activation({"id": node.label})
            except RequestError as e:
                assert IN_TRANSFORM_NO_VALUES in str(e)
            else:
                raise AssertionError(f"{node.label}: no value, yet an answer")
    widget._metrics({"metric": "mean"})


def test_ops_after_the_transform_take_the_fast_path_again(monkeypatch):
    class VmapThenLoop(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = torch.func.vmap(torch.cos)(x)
            for _ in range(20):
                x = x * 0.5
            return x

    careful = []
    original = Recorder._call_quietly

    def counting(self, facts, func, args, kwargs, frame):
        careful.append(facts.name)
        return original(self, facts, func, args, kwargs, frame)

    monkeypatch.setattr(Recorder, "_call_quietly", counting)
    log = lw.trace(VmapThenLoop(), torch.randn(3, 4))
    assert len(log.ops) == 21
    # cos inside vmap, and the first op after it (which sees the transform has ended)
    assert careful == ["cos", "mul"]


def test_jacrev_of_a_module_keeps_its_parameters_plain(tmp_path):
    """Inside torch.func's grad transforms even a parameter's detach comes back wrapped: the
    parameters first read there were saved wrapped, and saving the log raised."""

    class Jacobian(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.func.jacrev(self.lin)(x).sum() + self.lin(x).sum()

    model = Jacobian()
    log = lw.trace(model, torch.randn(3))
    assert torch.equal(log["lin.weight"].activation, model.lin.weight.detach())
    assert not any(_is_wrapped(t) for t in _saved_tensors(log))
    log.validate()
    log.save(tmp_path / "jac")
    assert_same_log(log, lw.load(tmp_path / "jac"))


def per_sample_grads(model: nn.Module, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The recipe of torch.func's docs: vmap(grad(...)) over a functional_call."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p: dict[str, torch.Tensor], sample: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(model, p, (sample.unsqueeze(0),)).pow(2).sum()

    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)


def test_per_sample_gradients_trace_in_a_section_with_and_without_grads(tmp_path):
    """vmap(grad(...)) makes tensors wrapped twice: keeping one raised "accessing `data`
    under vmap", and with grads=True the backward inside grad() kept wrapped gradients."""
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)), torch.randn(5, 4)
    expected = per_sample_grads(model, x)
    for grads in (False, True):
        with lw.tracing(model, grads=grads) as t:
            got = per_sample_grads(model, x)
        assert all(torch.equal(got[k], v) for k, v in expected.items())
        log = t.log
        assert "tanh" in [op.func for op in log.ops]
        assert not any(_is_wrapped(t) for t in _saved_tensors(log))
        if grads:  # grad()'s own backward: a pass in a transform, no gradient kept
            assert log.backward_passes and all(p.in_transform for p in log.backward_passes)
            assert all(g is None for leaf in log.leaves.values() for g in leaf.grads)
        log.validate()
        log.save(tmp_path / f"per_sample_{grads}")
        assert_same_log(log, lw.load(tmp_path / f"per_sample_{grads}"))


class JvpInForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, tangent = torch.func.jvp(lambda t: self.lin(t).tanh(), (x,), (torch.ones_like(x),))
        return value + tangent


class DualNumbersInForward(nn.Module):
    """Forward-mode AD by hand (torch.autograd.forward_ad), no torch.func transform."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with fwAD.dual_level():
            primal, tangent = fwAD.unpack_dual(self.lin(fwAD.make_dual(x, torch.ones_like(x))))
        return primal + tangent


def test_jvp_inside_forward_keeps_no_wrapped_value(tmp_path):
    """jvp's make_dual wraps plain inputs: its output was kept wrapped, and saving the log,
    its page and its statistics raised 'Cannot access storage of TensorWrapper'."""
    torch.manual_seed(0)
    model, x = JvpInForward(), torch.randn(4, 3)
    log = lw.trace(model, x)
    torch.testing.assert_close(log.output, model(x))
    assert not any(_is_wrapped(t) for t in _saved_tensors(log))
    (make_dual,) = [op for op in log.ops if op.func == "_make_dual"]
    assert make_dual.no_values == IN_TRANSFORM_NO_VALUES
    log.compute_metrics()
    log.validate()
    log.save(tmp_path / "jvp")
    assert_same_log(log, lw.load(tmp_path / "jvp"))
    assert log.to_html(tmp_path / "jvp.html").stat().st_size > 0


def test_forward_ad_ops_are_skipped_by_validate_with_the_reason():
    """A replay of unpack_dual outside the dual level has no tangent: validate raised
    'replay gave 1 outputs, saved 2' on a correct trace."""
    torch.manual_seed(0)
    model, x = DualNumbersInForward(), torch.randn(4, 3)
    log = lw.trace(model, x)
    torch.testing.assert_close(log.output, model(x))
    report = log.validate()
    dual_ops = {op.label for op in log.ops if op.func in ("_make_dual", "_unpack_dual")}
    assert len(dual_ops) == 2 and set(report.skipped) == dual_ops
    assert all("forward-mode AD" in report.skipped[label] for label in dual_ops)
    assert report.checked == len(log.ops) - 2  # linear, ones_like, add replay and match
