"""The graph payload's repeated blocks and the frontend's own groups in the `expanded` trait."""

from __future__ import annotations

import pytest
import torch
import traitlets
from transformers import GPT2Config, GPT2LMHeadModel

import lens_widget as lw
from lens_widget.widget import LensWidget
from lens_widget.widget.group_keys import is_group_address, output_groups, stack_address
from lens_widget.widget.payload import build_payload


@pytest.fixture(scope="module")
def gpt2() -> tuple[GPT2LMHeadModel, torch.Tensor]:
    torch.manual_seed(0)
    config = GPT2Config(n_layer=3, n_embd=32, n_head=2, vocab_size=64, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1))
    return GPT2LMHeadModel(config).eval(), ids


def test_payload_lists_the_repeated_blocks(gpt2) -> None:
    log = lw.trace(*gpt2)
    payload = build_payload(log)
    assert payload["repeatedBlocks"] == [["transformer.h.0", "transformer.h.1", "transformer.h.2"]]
    assert payload["repeatedBlocks"] == log.repeated_blocks
    # the rolled view holds only the first block: its ops carry the three passes
    rolled = payload["rolled"]["nodes"]
    assert not any("transformer.h.1" in g for n in rolled for g in n["groups"])
    assert {n["nPasses"] for n in rolled if "transformer.h.0" in n["groups"]} == {3}


def test_a_model_without_repeats_has_none() -> None:
    log = lw.trace(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), torch.randn(2, 3))
    assert build_payload(log)["repeatedBlocks"] == []


def test_group_addresses() -> None:
    modules = {"", "transformer", "transformer.h.0"}
    kv = "output.past_key_values.layers.0"
    outputs = output_groups(["output.logits", f"{kv}.keys", f"{kv}.values"])
    assert outputs == {"output.past_key_values"}
    assert stack_address(["transformer.h.0", "transformer.h.1"]) == "transformer.h.0×2"
    assert is_group_address("transformer.h.0×24", modules, outputs)
    assert is_group_address("output.past_key_values", modules, outputs)
    assert is_group_address("transformer", modules, outputs)
    for bad in ("output.logits", "nope×3", "transformer.h.0×1", "transformer.h.0×x", "output.x"):
        assert not is_group_address(bad, modules, outputs), bad


def test_chunk_addresses() -> None:
    """Chunks of a box with thousands of children (js/src/graph/chunks.ts): the model's own,
    a module's, a stack's or an output group's."""
    modules = {"", "transformer", "transformer.h.0"}
    outputs = {"output.past_key_values"}
    good = [
        "#1-100",
        "transformer#101-200",
        "transformer.h.0×24#1-12",
        "output.past_key_values#3-4",
    ]
    for address in good:
        assert is_group_address(address, modules, outputs), address
    for bad in ("nope#1-100", "#0-5", "#7-3", "transformer#1", "transformer#a-b", "#1-2#3-4"):
        assert not is_group_address(bad, modules, outputs), bad


def test_expanded_accepts_the_frontends_groups(gpt2) -> None:
    w = LensWidget(*gpt2)
    stack = stack_address(w.graph["repeatedBlocks"][0])
    # the KV cache's output group (`past_key_values`, or `cache` from transformers 5.x on)
    (cache,) = output_groups([n.label for n in w.model_log.outputs])
    w.expanded = ["transformer", stack, "transformer.h.1", cache]
    assert w.expanded == ["transformer", stack, "transformer.h.1", cache]
    with pytest.raises(traitlets.TraitError, match="unknown module addresses 'output.logits'"):
        w.expanded = ["output.logits"]
    with pytest.raises(traitlets.TraitError, match="unknown module"):
        w.expanded = ["transformer.h.7×2"]
