"""The class name a module's box shows: short, and never mistaken for torch.nn's.

A library that wraps a layer often names its wrapper after it: peft's LoRA layer is
``peft.tuners.lora.layer.Linear``, torch's quantized one ``torch.ao.nn.quantized.modules.
linear.Linear``. Shown as "Linear", a LoRA-wrapped ``q_proj`` reads like the plain ``k_proj``
beside it. A class whose name is a torch.nn class's but which is another class gets the
package that tells it apart: "lora.Linear", "quantized.Linear". Every other class (torch's
own, ``LlamaAttention``, a notebook's ``Net``) keeps its bare name.
"""

from __future__ import annotations

import functools

import torch

# Parts of a module path that say nothing about which library's class it is.
_GENERIC = frozenset(
    {"layer", "layers", "module", "modules", "nn", "model", "models", "modeling", "functional",
     "tuners", "src", "lib", "core", "utils", "common", "base", "impl"}
)  # fmt: skip


@functools.cache
def class_label(cls: type) -> str:
    """ "Linear" for torch.nn.Linear, "lora.Linear" for peft's LoRA Linear."""
    name = cls.__name__
    same_name = getattr(torch.nn, name, None)
    if not isinstance(same_name, type) or same_name is cls or cls.__module__ == "__main__":
        return name
    # transformers' "modeling_distilbert" names its model: "distilbert.Transformer"
    path = cls.__module__.split(".")
    parts = [p.removeprefix("modeling_") for p in path if not p.startswith("_")]
    for part in reversed(parts):
        if part not in _GENERIC and part != name.lower():
            return f"{part}.{name}"
    return f"{parts[0]}.{name}" if parts else name
