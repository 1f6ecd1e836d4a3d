"""A tiny Mixtral: a mixture-of-experts decoder whose router returns three tensors (its
logits, the chosen experts' weights and their indices)."""

from __future__ import annotations

import transformers

from .case import VOCAB, ZooCase, build, token_ids


def mixtral() -> ZooCase:
    """One layer, width 32, 4 experts with 2 chosen per token, one row of 12 tokens."""
    cfg = transformers.MixtralConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
    )
    return ZooCase(
        name="mixtral",
        model=build(lambda: transformers.MixtralForCausalLM(cfg)),
        args=(token_ids(batch=1),),
        kwargs={"use_cache": False},
        description="MixtralForCausalLM, 1 layer, d=32, 4 experts, top-2",
        expected_ops=("_grouped_mm", "topk", "softmax"),
        random_in_train=False,
    )
