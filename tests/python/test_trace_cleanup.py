"""A trace leaves the world as a plain forward would, also when the forward raises."""

from __future__ import annotations

import copy

import pytest
import torch
from cleanup_checks import (
    InputGuard,
    assert_globals_unchanged,
    assert_modules_unchanged,
    compare_with_plain_forward,
    global_snapshot,
    module_snapshot,
)
from small_models import SmallNet
from torch import nn

import lens_widget as lw


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("grad_mode", ["grad", "no_grad", "inference_mode"])
def test_trace_matches_plain_forward_in_every_mode(train, grad_mode):
    model = SmallNet().train(train)
    x = torch.randn(2, 3, 8, 8)
    context = {
        "grad": torch.enable_grad,
        "no_grad": torch.no_grad,
        "inference_mode": torch.inference_mode,
    }[grad_mode]
    with context():
        result = compare_with_plain_forward(model, (x,))
        log = result.log
        assert torch.equal(log.ops[-1].activation, result.reference)
        if grad_mode != "inference_mode":
            assert log.validate().checked == len(log.ops)


def test_forward_that_raises_gives_the_original_error_and_a_partial_log():
    class Broken(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x).relu()
            return y @ torch.ones(3, 3)  # shapes do not match

    model = Broken()
    x = torch.randn(2, 4)
    modules_before, globals_before = module_snapshot(model), global_snapshot()
    guard = InputGuard.take(x)
    with pytest.raises(RuntimeError) as caught:
        model(x)
    message = str(caught.value)
    torch.manual_seed(3)
    rng_before = torch.get_rng_state()
    with pytest.raises(RuntimeError) as traced:
        lw.trace(model, x)
    assert str(traced.value) == message
    assert torch.equal(torch.get_rng_state(), rng_before)
    log = traced.value.lens_log
    # a built-in exception class takes no weak reference: the log names it by a copy
    assert type(log.error) is RuntimeError and str(log.error) == message
    assert log.failed_op == "matmul_1_4"
    failed = log["matmul_1_4"]
    assert failed.failed and "RuntimeError" in failed.error and failed.activation is None
    assert failed.parents == ["relu_1_2", "ones_1_3"]
    assert [op.func for op in log.ops] == ["linear", "relu", "ones", "matmul"]
    assert log.outputs == []
    assert "PARTIAL" in str(log) and "<- raised" in str(log)
    assert log.validate().skipped["matmul_1_4"] == "raised during the forward pass"
    guard.assert_unchanged(x)
    assert_globals_unchanged(globals_before)
    assert_modules_unchanged(model, modules_before)


def test_error_raised_outside_torch_keeps_its_type_and_the_log():
    class Raises(nn.Module):
        def forward(self, x):
            x = x + 1
            raise KeyError("missing thing")

    globals_before = global_snapshot()
    with pytest.raises(KeyError, match="missing thing") as caught:
        lw.trace(Raises(), torch.zeros(1))
    assert caught.value.lens_log.labels == ["add_1_1"]
    assert caught.value.lens_log.failed_op is None
    assert_globals_unchanged(globals_before)


def test_non_module_model_and_bad_kwargs_are_clear_errors():
    with pytest.raises(TypeError, match="needs a torch.nn.Module, got function"):
        lw.trace(lambda x: x, torch.zeros(1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="kwargs must be a mapping"):
        lw.trace(nn.Identity(), torch.zeros(1), [1, 2])  # type: ignore[arg-type]


def test_wrong_inputs_raise_the_models_own_error_and_leave_nothing_behind():
    model = nn.Linear(3, 3)
    globals_before, modules_before = global_snapshot(), module_snapshot(model)
    state = copy.deepcopy(model.state_dict())
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        lw.trace(model, torch.zeros(2, 5))
    assert_globals_unchanged(globals_before)
    assert_modules_unchanged(model, modules_before)
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


def test_hooks_of_the_user_are_kept_and_still_fire():
    model = SmallNet().eval()
    calls: list[str] = []
    model.head.register_forward_hook(lambda m, i, o: calls.append("head"))
    log = lw.trace(model, torch.randn(1, 3, 8, 8))
    assert calls == ["head"] and len(model.head._forward_hooks) == 1
    assert log["head"].func == "linear"


def test_output_and_inputs_stay_plain_tensors():
    x = torch.randn(1, 3, 8, 8)
    log = lw.trace(SmallNet().eval(), x)
    assert type(log.output) is torch.Tensor and type(x) is torch.Tensor
    assert all(type(t) is torch.Tensor for n in log.nodes for t in n.activations or ())
