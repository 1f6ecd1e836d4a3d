"""Every tensor a module returns, named by its path in what it returned (issue 36 item 2): a
tuple's items, a dict's keys, a list of dicts, a dataclass's fields, which output of its node
each is; kept through save and load, and sent in the payload that the box and the module
inspector both read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.records import OutputLeaf
from lens_widget.widget.payload import build_payload
from model_zoo.detection import faster_rcnn_like
from model_zoo.moe import mixtral


def leaves(log: lw.ModelLog, address: str) -> list[tuple[str, int]]:
    return [tuple(leaf) for leaf in log.modules[address].output_leaves_of(1)]  # type: ignore[misc]


def test_a_detector_names_each_output_by_its_path() -> None:
    case = faster_rcnn_like()
    log = lw.trace(case.model, case.args)
    assert leaves(log, "roi_heads.box_predictor") == [("0", 0), ("1", 0)]
    shapes = [
        log.by_label[label].shape for label in log.modules["roi_heads.box_predictor"].outputs[1]
    ]
    assert shapes == [(150, 5), (150, 20)]
    assert leaves(log, "backbone.body") == [("0", 0), ("1", 0)]
    assert [p for p, _ in leaves(log, "backbone.fpn")] == ["0", "1", "pool"]
    assert [p for p, _ in leaves(log, "")] == ["0.boxes", "0.labels", "0.scores"]


def test_a_router_returns_topk_indices_as_output_1_of_their_node() -> None:
    case = mixtral()
    log = lw.trace(case.model, case.args, case.kwargs)
    gate = next((a for a, m in log.modules.items() if m.class_name == "MixtralTopKRouter"), "")
    if not gate:
        pytest.skip("this transformers' Mixtral has no router module (4.x: the gate is a Linear)")
    labels = log.modules[gate].outputs[1]
    assert leaves(log, gate) == [("0", 0), ("1", 0), ("2", 1)]
    topk = log.by_label[labels[2]]
    assert topk.func == "topk" and topk.shapes[1] == (12, 2)


@dataclasses.dataclass
class Pair:
    mean: torch.Tensor
    spread: torch.Tensor


class Returns(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[Pair, None, torch.Tensor]:
        y = self.lin(x)
        return Pair(y.mean(0), y.std(0)), None, y


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Returns()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pair, _, y = self.inner(x)
        return pair.mean + pair.spread + y.sum(0)


def test_a_plain_dataclass_and_a_none_keep_their_places(tmp_path: Path) -> None:
    log = lw.trace(Outer(), torch.randn(3, 4))
    assert leaves(log, "inner") == [("0.mean", 0), ("0.spread", 0), ("2", 0)]
    # save and load keep them; a file saved before they were kept gets positions
    loaded = lw.load(log.save(tmp_path / "a.lens"))
    assert loaded.modules["inner"].output_leaves == log.modules["inner"].output_leaves
    bare = dataclasses.replace(log.modules["inner"], output_leaves={})
    assert bare.output_leaves_of(1) == [OutputLeaf("0"), OutputLeaf("1"), OutputLeaf("2")]


def test_the_payload_lists_each_pass_outputs_with_their_shapes() -> None:
    case = faster_rcnn_like()
    payload = build_payload(lw.trace(case.model, case.args))
    modules = {m["address"]: m for m in payload["modules"]}
    (outputs,) = modules["roi_heads.box_predictor"]["outputs"]
    assert [(o["path"], o["shape"], o["output"]) for o in outputs] == [
        ("0", [150, 5], 0),
        ("1", [150, 20], 0),
    ]
    # each names a node of the unrolled view
    ids = {n["id"] for n in payload["unrolled"]["nodes"]}
    assert all(o["node"] in ids for o in outputs)
    # a module run three times lists three passes
    assert len(modules["rpn.head.conv"]["outputs"]) == 3
