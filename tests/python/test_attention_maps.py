"""Attention maps of fused attention ops equal softmax(QKᵀ·scale + mask), recomputed here."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

import lens_widget as lw
from lens_widget.log.attention import AttentionUnavailable, attention_weights


def _sdpa_ops(log: lw.ModelLog) -> list[lw.OpRecord]:
    ops = [n for n in log.ops if n.func == "scaled_dot_product_attention"]
    assert ops, "the model did not run fused attention"
    return ops


def _inputs(op: lw.OpRecord) -> list[torch.Tensor]:
    return [p.activations[i] for _, p, i in op.replay[1]]  # type: ignore[index]


def test_gpt2_padded_batch_maps_match_a_direct_softmax() -> None:
    config = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=50, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 50, (2, 7))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding on the second sequence
    log = lw.trace(GPT2LMHeadModel(config).eval(), (ids,), {"attention_mask": mask})
    for op in _sdpa_ops(log):
        q, k, _, attn_mask = _inputs(op)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        # transformers 5 passes a bool mask; 4.x an additive float one (0 or the dtype's min)
        if attn_mask.dtype == torch.bool:
            expected = torch.softmax(scores.masked_fill(~attn_mask, float("-inf")), -1)
        else:
            expected = torch.softmax(scores + attn_mask, -1)
        expected = expected.nan_to_num(0.0)  # padded queries see nothing: zeros, as SDPA gives
        weights = attention_weights(op)
        assert weights.shape == (2, 4, 7, 7)
        torch.testing.assert_close(weights, expected, equal_nan=True)
        # causal: a query never attends to a later token
        assert torch.all(weights[0].triu(1) == 0)


def test_llama_grouped_query_attention_uses_the_causal_flag_and_repeats_kv_heads() -> None:
    config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=50)  # fmt: skip
    log = lw.trace(LlamaForCausalLM(config).eval(), (torch.randint(0, 50, (1, 6)),))
    (op,) = _sdpa_ops(log)
    tensors = _inputs(op)
    q, k = tensors[0], tensors[1]
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = q @ k.transpose(-2, -1) * op.replay[0].kwargs.get("scale", q.shape[-1] ** -0.5)
    if len(tensors) > 3:
        scores = scores + tensors[3]
    else:
        scores = scores.masked_fill(torch.ones(6, 6, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(attention_weights(op), torch.softmax(scores, -1))


def test_multihead_attention_gives_per_head_weights() -> None:
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    log = lw.trace(mha, (x, x, x))
    (op,) = [n for n in log.ops if n.func == "multi_head_attention_forward"]
    with torch.no_grad():
        _, expected = mha(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(attention_weights(op), expected)


def test_non_attention_ops_and_unsaved_inputs_say_why() -> None:
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(1, 3, 8)
    log = lw.trace(mha, (x, x, x), save=["multi_head_attention_forward"])
    (op,) = [n for n in log.ops if n.func == "multi_head_attention_forward"]
    with pytest.raises(AttentionUnavailable, match="was not saved"):
        attention_weights(op)
    linear_log = lw.trace(torch.nn.Linear(2, 2), (torch.randn(1, 2),))
    with pytest.raises(AttentionUnavailable, match="not an attention op"):
        attention_weights(linear_log.ops[0])
