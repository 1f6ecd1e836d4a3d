"""A mixture-of-experts decoder from `transformers`: Mixtral, tiny and random.

Its experts run as one grouped matrix multiply (`torch._grouped_mm` in transformers 5 on
torch 2.13), routed by a top-2 router over 4 experts.
"""

from __future__ import annotations

import transformers

from .case import BATCH, SEQ, TINY_BERT_STYLE, VOCAB, ZooCase, build, padding_mask, token_ids


def mixtral() -> ZooCase:
    """MixtralForCausalLM: 2 layers of width 32, 4 query / 2 key-value heads, 4 experts, top 2."""
    cfg = transformers.MixtralConfig(
        vocab_size=VOCAB,
        hidden_size=TINY_BERT_STYLE["hidden_size"],
        num_hidden_layers=TINY_BERT_STYLE["num_hidden_layers"],
        intermediate_size=TINY_BERT_STYLE["intermediate_size"],
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
    )
    model = build(lambda: transformers.MixtralForCausalLM(cfg))
    return ZooCase(
        "mixtral",
        model,
        (token_ids(),),
        {"attention_mask": padding_mask()},
        description=(
            f"MixtralForCausalLM, {cfg.num_local_experts} experts (top "
            f"{cfg.num_experts_per_tok}), vocab {VOCAB}, {BATCH} rows of {SEQ} tokens"
        ),
        min_ops=120,
        expected_ops=("_grouped_mm", "scaled_dot_product_attention"),
    )
