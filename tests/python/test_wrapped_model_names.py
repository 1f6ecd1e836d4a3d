"""A wrapped model keeps its names: a PEFT LoRA Llama's LoRA layers show their wrapper's class
("lora.Linear", where the plain k_proj is "Linear"), in the log and in the widget's payload."""

from __future__ import annotations

import pytest
import torch

import lens_widget as lw
from lens_widget.capture.class_names import class_label
from lens_widget.widget.payload import build_payload
from model_zoo.wrapped import lora_llama

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

ATTN = "base_model.model.model.layers.0.self_attn"


@pytest.fixture(scope="module")
def log() -> lw.ModelLog:
    case = lora_llama()
    with torch.no_grad():
        return lw.trace(case.model, case.args, case.kwargs)


def test_lora_layers_show_their_wrappers_class_in_the_payload(log):
    classes = {m["address"]: m["className"] for m in build_payload(log)["modules"]}
    assert classes[f"{ATTN}.q_proj"] == classes[f"{ATTN}.v_proj"] == "lora.Linear"
    assert classes[f"{ATTN}.k_proj"] == classes[f"{ATTN}.o_proj"] == "Linear"
    assert classes[f"{ATTN}.q_proj.base_layer"] == "Linear"  # the plain layer it wraps
    # transformers' own class, unqualified (4.x: LlamaSdpaAttention)
    assert classes[ATTN] in ("LlamaAttention", "LlamaSdpaAttention")
    assert log.modules[f"{ATTN}.q_proj"].class_name == "lora.Linear"


def test_only_a_name_that_collides_with_torch_nn_is_qualified():
    import peft
    import torch.ao.nn.quantized as quantized

    assert class_label(torch.nn.Linear) == "Linear"
    assert class_label(peft.tuners.lora.layer.Linear) == "lora.Linear"
    assert class_label(peft.tuners.lora.layer.Embedding) == "lora.Embedding"
    assert class_label(quantized.Linear) == "quantized.Linear"
    assert class_label(peft.tuners.lora.layer.LoraLayer) == "LoraLayer"  # no torch.nn twin

    class Linear(torch.nn.Module):  # a notebook's own: its author knows it
        pass

    Linear.__module__ = "__main__"
    assert class_label(Linear) == "Linear"


def test_a_transformers_class_is_qualified_by_its_model():
    from transformers.models.distilbert.modeling_distilbert import Transformer

    assert class_label(Transformer) == "distilbert.Transformer"  # not torch.nn.Transformer
