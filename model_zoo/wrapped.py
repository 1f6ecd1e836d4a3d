"""Models inside wrappers: a PEFT LoRA Llama (base_model.model.model.layers.0.self_attn...)."""

from __future__ import annotations

import transformers
from peft import LoraConfig, get_peft_model

from .case import VOCAB, ZooCase, build, token_ids


def lora_llama() -> ZooCase:
    """A 2-layer width-32 Llama (2 query heads, 1 key/value head) with rank-4 LoRA adapters
    on q_proj and v_proj."""
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,  # GQA: q_proj and v_proj differ (not one folded pair)
        max_position_embeddings=64,
    )
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    model = build(lambda: get_peft_model(transformers.LlamaForCausalLM(cfg), lora))
    return ZooCase(
        name="lora_llama",
        model=model,
        args=(token_ids(batch=1),),
        kwargs={"use_cache": False},
        description="PEFT LoRA (r=4, q_proj/v_proj) on LlamaForCausalLM, 2 layers, d=32",
        random_in_train=False,
    )
