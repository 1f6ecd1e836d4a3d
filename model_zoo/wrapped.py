"""Models wrapped by a library around a plain one: a PEFT LoRA Llama.

PEFT moves the model under `base_model.model.` and replaces each targeted Linear with its own
`peft.tuners.lora.layer.Linear` (which holds the original as `base_layer`).
"""

from __future__ import annotations

import peft

from .case import BATCH, SEQ, VOCAB, ZooCase, build
from .language import llama


def lora_llama() -> ZooCase:
    """The tiny Llama with LoRA adapters (rank 4) on every q_proj and v_proj."""
    case = llama()
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    case.model = build(lambda: peft.get_peft_model(case.model, config))
    case.name = "lora_llama"
    case.description = (
        f"PEFT LoRA (r=4, q_proj/v_proj) on LlamaForCausalLM, vocab {VOCAB}, "
        f"{BATCH} rows of {SEQ} tokens"
    )
    return case
