"""Axis names from evidence (issue 36 item 4): a name given where it is known (an embedding's
token axis, a conv's channel axis, an attention's head axis, a router's experts) follows the
tensor through the graph, one tensor reads the same wherever it is shown, and a dim nothing
names reads "dim i". On a timm-style ViT, a detector head, a Mixtral router and a UNet."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.widget import requests
from lens_widget.widget.axis_moves import moved_order, reshape_groups
from lens_widget.widget.dim_names import DimNames, wire_names
from model_zoo.detection import faster_rcnn_like
from model_zoo.diffusion import unet2d_condition
from model_zoo.moe import mixtral
from model_zoo.vit_like import vit_like


class Named:
    """A traced case's dim names, by node and by what a module returned."""

    def __init__(self, log: lw.ModelLog) -> None:
        self.log = log
        self.dims = DimNames(log.nodes)

    def node(self, label: str, output: int = 0) -> list[str]:
        return wire_names(self.dims.of(label, output))

    def module(self, address: str, index: int = 0) -> list[str]:
        info = self.log.modules[address]
        label = info.outputs[1][index]
        return self.node(label, info.output_leaves_of(1)[index].output)

    def ops(self, func: str, module: str = "") -> list[list[str]]:
        ops = [n for n in self.log.ops if n.func == func and n.module.startswith(module)]
        return [self.node(n.label) for n in ops]


def traced(case_builder) -> Named:  # noqa: ANN001
    case = case_builder()
    return Named(lw.trace(case.model, case.args, case.kwargs))


@pytest.fixture(scope="module")
def vit() -> Named:
    return traced(vit_like)


def test_a_vit_residual_stream_reads_the_same_at_blocks_mlp_and_attention(vit) -> None:
    stream = ["batch", "token", "feature"]
    for address in ("blocks.0", "blocks.0.attn", "blocks.0.mlp", "blocks.1", "norm"):
        assert vit.module(address) == stream, address  # was "height×width, channel" and so on
    # the patches before the class token joins them: height×width merged by the flatten
    assert vit.module("patch_embed") == ["batch", "height×width", "feature"]
    # attention's own axes, from scaled_dot_product_attention
    assert vit.ops("scaled_dot_product_attention") == [["batch", "head", "token", "feature"]] * 2
    # the heads split off the qkv features, carried through reshape and permute
    (permuted,) = vit.ops("permute", "blocks.0")
    assert permuted == ["dim 0", "batch", "head", "token", "feature"]


def test_a_detector_head_names_classes_and_leaves_proposals_unnamed() -> None:
    det = traced(faster_rcnn_like)
    # 150 proposals are no batch (they read "(batch, feature)"): nothing names them
    assert det.module("roi_heads.box_predictor", 0) == ["dim 0", "class"]
    assert det.module("roi_heads.box_predictor", 1) == ["dim 0", "feature"]
    # the backbone's levels are images: batch, channel, height, width at every level
    image = ["batch", "channel", "height", "width"]
    assert [det.module("backbone.fpn", i) for i in range(3)] == [image] * 3
    # each proposal's pooled square keeps the level's channels and spatial axes
    (pooled,) = det.ops("grid_sample")
    assert pooled == ["dim 0", "channel", "height", "width"]
    flat = det.ops("flatten", "roi_heads.box_head")[0]
    assert flat == ["dim 0", "channel×height×width"]
    # the plot of the class logits is labelled the same way
    logits = det.log.modules["roi_heads.box_predictor"].outputs[1][0]
    result, _ = requests.activation(det.log.by_label, {"id": logits}, det.dims)
    assert result["dims"] == ["dim 0", "class"]


def test_a_router_names_tokens_experts_and_its_top_k() -> None:
    moe = traced(mixtral)
    gate = next((a for a, m in moe.log.modules.items() if m.class_name == "MixtralTopKRouter"), "")
    if gate:  # transformers 5: a router module returns the logits and its top-k
        logits, weights, chosen = (moe.module(gate, i) for i in range(3))
    else:  # transformers 4: the gate is a Linear, and the block takes the top-k
        block = "model.layers.0.block_sparse_moe"
        logits = moe.module(f"{block}.gate")
        topk = next(n for n in moe.log.ops if n.func == "topk" and n.module == block)
        weights, chosen = (moe.node(topk.label, i) for i in range(2))
    assert logits == ["token", "expert"]  # its 4 experts read "feature"
    assert weights == chosen == ["token", "top-k"]
    # the decoder's stream, before and after the experts
    assert moe.module("model.layers.0") == ["batch", "token", "feature"]


def test_a_unet_names_channels_and_its_attention_tokens_over_height_and_width() -> None:
    unet = traced(unet2d_condition)
    image = ["batch", "channel", "height", "width"]
    assert unet.module("conv_in") == image
    assert unet.module("mid_block.attentions.0") == image
    sdpa = unet.ops("scaled_dot_product_attention", "mid_block")
    assert sdpa and all(s == ["batch", "head", "token", "feature"] for s in sdpa)
    # the image flattened into tokens for attention, and back: the same height and width
    inner = "mid_block.attentions.0.transformer_blocks.0"
    assert unet.module(inner) == ["batch", "token", "feature"]
    (back,) = unet.ops("permute", "mid_block.attentions.0")[1:]
    assert back[2:] == ["height", "width"]


def test_nothing_named_reads_dim_i() -> None:
    class Shuffle(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.reshape(6, 4).t().reshape(3, 8)

    named = Named(lw.trace(Shuffle(), torch.randn(2, 3, 4)))
    assert named.module("") == ["dim 0", "dim 1"]


def test_view_runs_and_orders() -> None:
    assert list(reshape_groups((1, 16, 32), (16, 32))) == [([0, 1], [0]), ([2], [1])]
    assert list(reshape_groups((2, 3, 4, 4), (2, 3, 16))) == [([0], [0]), ([1], [1]), ([2, 3], [2])]
    assert list(reshape_groups((6,), (4,))) == []
    assert moved_order("permute", ((2, 0, 1),), {}, 3) == [2, 0, 1]
    assert moved_order("transpose", (1, 2), {}, 3) == [0, 2, 1]
    assert moved_order("movedim", (0, 2), {}, 3) == [1, 2, 0]
    assert moved_order("permute", ((0, 0, 1),), {}, 3) is None
