"""ModelLog.repeated_blocks and the rolled fold of repeated blocks, on real models."""

from __future__ import annotations

import pytest
import torch
from repeated_blocks_reference import reference_folded_layers, reference_repeated_blocks
from torch import nn
from transformers import (
    BertConfig,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    ResNetConfig,
    ResNetModel,
)

import lens_widget as lw
from lens_widget.log.repeated_blocks import find_repeated_blocks, folded_layers
from model_zoo import TEST_MODELS, chain


def _gpt2(n_layer: int) -> lw.ModelLog:
    config = GPT2Config(n_layer=n_layer, n_embd=64, n_head=4, vocab_size=100, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    model = GPT2LMHeadModel(config).eval()
    return lw.trace(model, (torch.randint(0, 100, (1, 8), generator=torch.Generator()),))


def test_gpt2_blocks_fold_into_one_group() -> None:
    log = _gpt2(4)
    assert log.repeated_blocks == [[f"transformer.h.{i}" for i in range(4)]]


def test_rolled_graph_folds_the_repeats_onto_the_first_block() -> None:
    log = _gpt2(4)
    rolled = log.rolled_graph
    block_ops = [n for n in log.ops if n.module.startswith("transformer.h.")]
    first_block = {n.layer for n in block_ops if n.module.startswith("transformer.h.0")}
    # every op of h.1..h.3 lives in a node of h.0, which holds one pass per block
    for layer in first_block:
        records = rolled.nodes[layer]["records"]
        assert len(records) == 4
        assert [r.module.split(".")[2] for r in records] == ["0", "1", "2", "3"]
    assert not any(r.module.startswith("transformer.h.1") for r in _rolled_firsts(rolled))
    # params of later blocks fold onto h.0's; the stack's output feeds back into its input
    assert rolled.nodes["transformer.h.0.attn.c_attn.weight"]["n_passes"] == 4
    assert "transformer.h.3.attn.c_attn.weight" not in rolled
    assert sum(len(d["records"]) for _, d in rolled.nodes(data=True)) == len(log.nodes)
    assert any(len(d["passes"]) == 3 for _, _, d in rolled.edges(data=True))  # h.k -> h.k+1


def _rolled_firsts(rolled: object) -> list[lw.OpRecord]:
    return [d["records"][0] for _, d in rolled.nodes(data=True)]  # type: ignore[attr-defined]


def test_bert_layers_fold_but_parallel_query_key_value_do_not() -> None:
    config = BertConfig(num_hidden_layers=3, hidden_size=32, num_attention_heads=4,
                        intermediate_size=64, vocab_size=100)  # fmt: skip
    log = lw.trace(BertModel(config).eval(), (torch.randint(0, 100, (1, 6)),))
    assert log.repeated_blocks == [[f"encoder.layer.{i}" for i in range(3)]]


def test_resnet_stage_blocks_fold_after_the_downsampling_block() -> None:
    config = ResNetConfig(depths=[1, 3], hidden_sizes=[8, 16], embedding_size=8)
    log = lw.trace(ResNetModel(config).eval(), (torch.randn(1, 3, 32, 32),))
    assert ["encoder.stages.1.layers.1", "encoder.stages.1.layers.2"] in log.repeated_blocks
    assert not any("encoder.stages.1.layers.0" in g for g in log.repeated_blocks)


class _Blocks(nn.Module):
    def __init__(self, widths: list[int]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(w, w), nn.ReLU(), nn.Linear(w, w), nn.Tanh(), nn.ReLU())
            for w in widths
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def test_blocks_that_differ_in_ops_are_not_grouped() -> None:
    model = _Blocks([4, 4, 4])
    model.blocks[1][3] = nn.Sigmoid()  # the middle block runs another op sequence
    log = lw.trace(model, (torch.randn(2, 4),))
    assert log.repeated_blocks == []
    log = lw.trace(_Blocks([4, 4, 4]), (torch.randn(2, 4),))
    assert log.repeated_blocks == [["blocks.0", "blocks.1", "blocks.2"]]


def test_a_model_without_repeats_rolls_as_before() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    log = lw.trace(model, (torch.randn(2, 4),))
    assert log.repeated_blocks == []
    assert set(log.rolled_graph) == {n.layer for n in log.nodes}


class _Nested(nn.Module):
    """Stacks of stacks: inner repeats inside the first outer block and inside the later ones
    (kept there, dropped here), parameters folding through two levels."""

    def __init__(self) -> None:
        super().__init__()
        self.outer = nn.ModuleList(_Blocks([4, 4, 4]) for _ in range(3))
        self.head = _Blocks([4, 4])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.outer:
            x = block(x)
        return self.head(x)


def test_nested_stacks_fold_through_both_levels() -> None:
    log = lw.trace(_Nested(), (torch.randn(2, 4),))
    assert log.repeated_blocks == [
        ["outer.0", "outer.1", "outer.2"],
        ["outer.0.blocks.0", "outer.0.blocks.1", "outer.0.blocks.2"],
        ["head.blocks.0", "head.blocks.1"],
    ]
    fold = folded_layers(log.nodes, log.repeated_blocks)
    # a weight of outer.2's third inner block folds onto outer.0's first inner block
    assert fold["outer.2.blocks.2.0.weight"] == "outer.0.blocks.0.0.weight"
    assert fold["head.blocks.1.2.bias"] == "head.blocks.0.2.bias"


def _case_log(name: str) -> lw.ModelLog:
    case = chain(400) if name == "chain" else TEST_MODELS[name]()
    with torch.no_grad():
        return lw.trace(case.model, case.args, case.kwargs, save=None)


@pytest.mark.parametrize("name", ["gpt2", "bert", "t5", "resnet", "swin", "chain", "nested"])
def test_fast_search_and_fold_match_the_plain_reference(name: str) -> None:
    if name == "nested":
        log = lw.trace(_Nested(), (torch.randn(2, 4),), save=None)
    else:
        log = _case_log(name)
    groups = find_repeated_blocks(log.nodes, log.modules)
    assert groups == reference_repeated_blocks(log.nodes, log.modules)
    fold = folded_layers(log.nodes, groups)
    assert fold == reference_folded_layers(log.nodes, groups)
    if name in ("gpt2", "bert", "chain", "nested"):  # these do repeat: the fold is not empty
        assert groups and fold
