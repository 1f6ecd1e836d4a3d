"""Real diffusers models (tiny random-weight UNet2DConditionModel and AutoencoderKL): their
outputs, diffusers `BaseOutput`s registered with pytree without key functions, trace and are
named `output.sample`; the trace is faithful, validates, saves and loads, trains bit-equal to
an untraced step, and draws in the widget."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from cleanup_checks import compare_with_plain_forward, seed_all, tensor_leaves
from log_equality import assert_same_log
from torch import nn

import lens_widget as lw
from lens_widget import LensWidget
from model_zoo import DIFFUSION_MODELS, ZooCase

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

NAMES = list(DIFFUSION_MODELS)


def build(name: str, mode: str = "eval") -> ZooCase:
    case = DIFFUSION_MODELS[name]()
    case.model.train(mode == "train")
    return case


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("name", NAMES)
def test_trace_is_faithful_and_names_the_sample(name: str, mode: str) -> None:
    case = build(name, mode)
    result = compare_with_plain_forward(case.model, case.args, case.kwargs, seed=3)
    log = result.log
    assert log.error is None
    assert type(result.output).__name__ == type(result.reference).__name__
    assert torch.equal(result.output.sample, result.reference.sample)
    assert [node.label for node in log.outputs] == ["output.sample"]
    (producer,) = log["output.sample"].parents
    assert torch.equal(log[producer].activation, result.output.sample.detach())
    funcs = {op.func for op in log.ops}
    assert len(log.ops) >= case.min_ops
    assert not [f for f in case.expected_ops if f not in funcs]
    assert log.validate().checked == len(log.ops)


@pytest.mark.parametrize("name", NAMES)
def test_save_and_load_give_the_same_log(name: str, tmp_path) -> None:
    case = build(name)
    log = lw.trace(case.model, case.args, case.kwargs)
    log.save(tmp_path / name)
    loaded = lw.load(tmp_path / name)
    assert_same_log(log, loaded)
    assert loaded.validate().checked == len(log.ops)
    assert list(loaded.output) == ["sample"]
    assert torch.equal(loaded.output.sample, log.output.sample)


def _loss(output: Any) -> torch.Tensor:
    return tensor_leaves(output)[0].float().pow(2).mean()


def _grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("name", NAMES)
def test_traced_backward_gives_the_untraced_grad_bit_for_bit(name: str) -> None:
    case = build(name, "train")
    plain_model = copy.deepcopy(case.model)
    seed_all(5)
    _loss(plain_model(*case.args, **case.kwargs)).backward()
    seed_all(5)
    log = lw.trace(case.model, case.args, case.kwargs, backward=_loss)
    plain, traced = _grads(plain_model), _grads(case.model)
    assert any(g is not None for g in plain.values())
    for pname, expected in plain.items():
        assert (traced[pname] is None) == (expected is None), pname
        if expected is not None:
            assert torch.equal(traced[pname], expected), f"{pname}: .grad differs"
            assert torch.equal(log.leaves[pname].grad, expected), f"{pname}: logged grad"


@pytest.mark.parametrize("name", NAMES)
def test_widget_payload_shows_the_named_sample(name: str) -> None:
    case = build(name)
    log = lw.trace(case.model, case.args, case.kwargs)
    widget = LensWidget.from_log(log)
    nodes = widget.graph["unrolled"]["nodes"]
    labels = {node["id"] for node in nodes}
    assert "output.sample" in labels
    assert {op.label for op in log.ops} <= labels
    widget.close()
