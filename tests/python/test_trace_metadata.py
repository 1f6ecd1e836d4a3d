"""Per-op metadata, nested inputs/outputs, and the summary."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from function_module import FunctionModule
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.modeling_outputs import BaseModelOutput

import lens_widget as lw


class WithSideBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(3)  # created inside: not from the input
        unused = x.sum() * 0  # does not feed the output
        del unused
        return self.proj(x) + positions


def test_metadata_of_an_op():
    log = lw.trace(WithSideBranch(), torch.randn(2, 4))
    linear = log["linear_1_4"]
    assert (linear.shape, linear.dtype, linear.device, linear.nbytes) == (
        (2, 3),
        "float32",
        "cpu",
        24,
    )
    assert [(p.name, p.shape, p.numel) for p in linear.params] == [
        ("proj.weight", (3, 4), 12),
        ("proj.bias", (3,), 3),
    ]
    assert [(a.parent, a.position) for a in linear.parent_args] == [
        ("input.0", "0"),
        ("proj.weight", "1"),
        ("proj.bias", "2"),
    ]
    assert linear.children == ["add_1_5"]
    # The user's line that called the module, not torch's own linear.py.
    assert linear.source.startswith(__file__) and "self.proj(x)" in linear.source_code
    add = log["add_1_5"]
    assert add.source.startswith(__file__) and add.source_code == "return self.proj(x) + positions"


def test_from_input_and_feeds_output():
    log = lw.trace(WithSideBranch(), torch.randn(2, 4))
    assert log["arange_1_1"].from_input is False
    assert log["arange_1_1"].feeds_output is True
    assert log["sum_1_2"].from_input is True
    assert log["sum_1_2"].feeds_output is False
    assert log["mul_1_3"].feeds_output is False
    assert all(op.feeds_output for op in log.ops if op.func in ("linear", "add"))


@dataclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


class NestedIO(nn.Module):
    def forward(self, batch: dict, scale: torch.Tensor, *, bias: torch.Tensor):
        a = batch["a"] * scale
        b = batch["pair"][1] + bias
        return {"sum": a + b, "parts": (a, [b]), "pair": Pair(a, b), "hf": BaseModelOutput(a)}


def test_nested_inputs_and_outputs_get_names_and_nodes():
    batch = {"a": torch.ones(2), "pair": (torch.zeros(2), torch.full((2,), 3.0))}
    log = lw.trace(NestedIO(), (batch, torch.tensor(2.0)), {"bias": torch.ones(2)})
    assert [n.label for n in log.inputs] == [
        "input.0.a",
        "input.0.pair.0",
        "input.0.pair.1",
        "input.1",
        "input.bias",
    ]
    assert [n.label for n in log.outputs] == [
        "output.sum",
        "output.parts.0",
        "output.parts.1.0",
        "output.pair.left",
        "output.pair.right",
        "output.hf.last_hidden_state",
    ]
    assert log["output.pair.right"].parents == ["add_1_2"]
    assert log["add_1_2"].parents == ["input.0.pair.1", "input.bias"]
    assert torch.equal(log["output.sum"].activation, log.output["sum"])
    log.validate()


def test_summary_says_what_a_user_wants():
    log = lw.trace(WithSideBranch(), torch.randn(2, 4))
    text = str(log)
    for expected in (
        "ModelLog of WithSideBranch",
        "structure: branching",
        "2 modules ran",
        f"{len(log.ops)} ops",
        "inputs: input.0 (2, 4)",
        "parameters: 15",
        "traced in",
        "proj: Linear",
        "linear_1_4: linear -> (2, 3)  [proj]",
    ):
        assert expected in text, expected


def test_summary_shortens_long_op_lists():
    class Long(nn.Module):
        def forward(self, x):
            for i in range(100):
                x = x + i
            return x

    text = str(lw.trace(Long(), torch.zeros(1)))
    assert "... 60 more ops ..." in text
    assert text.count("add_1_1:") == 40


def test_kv_cache_objects_in_the_output_are_walked():
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50)).eval()
    log = lw.trace(model, (torch.randint(0, 50, (1, 4)),), {"use_cache": True})
    names = [n.label for n in log.outputs]
    assert names[0] == "output.logits"
    # transformers names the cache field `past_key_values`, or `cache` from 5.x on
    (cache,) = [key for key in log.output if key != "logits"]
    # a Cache object (its layers' keys), or the legacy tuple of (key, value) per layer (4.45)
    legacy = isinstance(log.output[cache], tuple)
    assert (f"output.{cache}.0.0" if legacy else f"output.{cache}.layers.0.keys") in names
    assert log.structure == "branching"


def test_partial_trace_marks_what_led_to_the_failure():
    def broken(x):
        side = x.exp()  # leads nowhere
        y = x.relu()
        return y @ torch.ones(5, 5) + side

    with pytest.raises(RuntimeError) as caught:
        lw.trace(FunctionModule(broken), torch.randn(2, 3))
    log = caught.value.lens_log
    assert {op.label for op in log.ops if op.feeds_output} == {"relu_1_2", "ones_1_3", "matmul_1_4"}
    assert log["exp_1_1"].feeds_output is False
