"""timm and torchvision models (model_zoo/vision_libs.py): a trace is faithful and validates,
the log survives save/load, a traced backward leaves `.grad` bit-equal to an untraced step, and
the widget draws the model. Skipped where timm or torchvision is not installed (the `vision`
extra; `make test-compat` installs it)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from cleanup_checks import compare_with_plain_forward, seed_all, tensor_leaves
from log_equality import assert_same_log
from torch import nn

import lens_widget as lw
from model_zoo import ZooCase
from model_zoo.vision_libs import LIBRARY_MODELS, LIBRARY_OF

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

NAMES = list(LIBRARY_MODELS)
SEED = 7

# Modules each model's widget must list (its own names for its parts).
MODULES = {
    "timm_vit": ["patch_embed.proj", "blocks.0.attn.qkv", "blocks.1.mlp.fc2", "norm", "head"],
    "timm_efficientnet": ["conv_stem", "blocks.1.0.conv_dw", "blocks.1.0.se", "conv_head"],
    "tv_resnet": ["conv1", "layer1.0.conv1", "layer4.0.downsample.0", "fc"],
    "tv_fasterrcnn": [
        "transform",
        "backbone.body",
        "backbone.fpn",
        "rpn.head.conv",
        "roi_heads.box_roi_pool",
        "roi_heads.box_predictor.cls_score",
    ],
}


def build(name: str, mode: str) -> tuple[ZooCase, dict[str, Any]]:
    """The case in `mode`, and its keyword inputs for that mode (a detector's targets)."""
    pytest.importorskip(LIBRARY_OF[name])
    case = LIBRARY_MODELS[name]()
    case.model.train(mode == "train")
    kwargs = {**case.kwargs, **(case.train_kwargs if mode == "train" else {})}
    return case, kwargs


def loss_of(output: Any) -> torch.Tensor:
    """A scalar from every floating output tensor: logits, a detector's boxes and scores, or
    its dict of losses."""
    leaves = [t for t in tensor_leaves(output) if t.is_floating_point() and t.requires_grad]
    return torch.stack([t.float().pow(2).mean() for t in leaves]).sum()


def param_grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("name", NAMES)
def test_trace_is_faithful_and_every_op_replays(name: str, mode: str) -> None:
    case, kwargs = build(name, mode)
    # Same outputs, state (BatchNorm statistics), RNG, inputs, hooks and globals as a plain run.
    result = compare_with_plain_forward(case.model, case.args, kwargs, seed=SEED)
    log = result.log
    assert log.error is None and log.failed_op is None
    assert log.model_class == type(case.model).__name__
    assert len(log.ops) >= case.min_ops, f"only {len(log.ops)} ops traced"
    funcs = {op.func for op in log.ops}
    expected = case.expected_ops + (case.train_ops if mode == "train" else ())
    assert not [f for f in expected if f not in funcs], f"ops not traced, among {sorted(funcs)}"
    # Each output tensor (a detector's boxes, labels, scores per image) is its producer's.
    leaves = tensor_leaves(result.output)
    sinks = [r for r in log.nodes if r.kind == "output"]
    assert len(sinks) == len(leaves), f"{len(sinks)} output nodes for {len(leaves)} tensors"
    for sink, leaf in zip(sinks, leaves, strict=True):
        producer = log[sink.parents[0]]
        index = sink.parent_args[0].output_index if sink.parent_args else 0
        assert producer.activations is not None, sink.label
        assert torch.equal(producer.activations[index], leaf.detach()), sink.label
    report = log.validate()
    assert report.checked == len(log.ops), f"not replayed: {report.skipped}"


@pytest.mark.parametrize("name", NAMES)
def test_log_round_trips_through_save_and_load(name: str, tmp_path) -> None:
    case, kwargs = build(name, "eval")
    log = lw.trace(case.model, case.args, kwargs)
    log.save(tmp_path / name)
    loaded = lw.load(tmp_path / name)
    assert_same_log(log, loaded)
    assert loaded.validate().checked == len(log.ops)  # every op replays from the files


@pytest.mark.parametrize("name", NAMES)
def test_traced_backward_gives_the_gradients_of_an_untraced_step(name: str) -> None:
    case, kwargs = build(name, "train")
    model = case.model
    seed_all(SEED)
    loss_of(model(*case.args, **kwargs)).backward()
    plain = param_grads(model)
    rng_plain = torch.get_rng_state()
    assert any(g is not None for g in plain.values()), "the plain step gave no gradient"
    model.zero_grad(set_to_none=True)

    seed_all(SEED)
    log = lw.trace(model, case.args, kwargs, backward=loss_of)
    assert torch.equal(torch.get_rng_state(), rng_plain)
    assert len(log.backward_passes) == 1 and log.backward_passes[0].error is None
    for pname, expected in plain.items():
        param = dict(model.named_parameters())[pname]
        assert (param.grad is None) == (expected is None), pname
        if expected is None:
            continue
        assert torch.equal(param.grad, expected), f"user's .grad of {pname} differs"
        leaf = log.leaves[pname]
        assert leaf.kind == "param" and leaf.received, pname
        assert torch.equal(leaf.grad, expected), f"logged grad of {pname} differs"


@pytest.mark.parametrize("name", NAMES)
def test_widget_draws_the_model_with_its_modules(name: str) -> None:
    case, kwargs = build(name, "eval")
    widget = lw.LensWidget(case.model, case.args, kwargs)
    payload = widget.graph
    assert payload["modelClass"] == type(case.model).__name__
    assert payload["error"] is None and payload["nOps"] >= case.min_ops
    addresses = {m["address"] for m in payload["modules"]}
    assert not [a for a in MODULES[name] if a not in addresses], sorted(addresses)
    assert len(payload["unrolled"]["nodes"]) > payload["nOps"]  # inputs, params, outputs too
    assert payload["rolled"]["nodes"]
