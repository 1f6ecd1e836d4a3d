"""Cases a reviewer found: each once broke the tracer or gave a misleading log."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw


def test_inference_tensors_as_inputs_and_inside_forward():
    with torch.inference_mode():
        x = torch.randn(2, 3)
    with torch.no_grad():
        log = lw.trace(nn.Linear(3, 3), x)
    assert log.validate().checked == 1

    class InferenceInside(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            with torch.inference_mode():
                y = self.fc(x)
            return y * 2

    with torch.no_grad():
        log = lw.trace(InferenceInside(), torch.randn(2, 3))
    assert [op.func for op in log.ops] == ["linear", "mul"]


def test_uninitialized_memory_is_compared_by_shape_only():
    def fill(x):
        out = torch.empty_like(x)
        torch.add(x, 1, out=out)
        values, indices = torch.empty(4), torch.empty(4, dtype=torch.long)
        torch.max(x, 1, out=(values, indices))
        return out * 2 + values.unsqueeze(1)

    log = lw.trace(FunctionModule(fill), torch.randn(4, 4))
    assert log.validate().checked == len(log.ops)


def test_inplace_target_passed_by_keyword_is_copied_before_the_write():
    def init(x):
        c = x * 1
        nn.init.normal_(tensor=c)
        return c * 2

    x = torch.randn(4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "overwritten by a call the tracer could not see"
        log = lw.trace(FunctionModule(init), x)
    assert torch.equal(log["mul_1_1"].activation, x)
    assert log["normal_1_2"].inplace


def test_explicit_generator_is_skipped_by_validate_and_left_alone():
    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.g = torch.Generator().manual_seed(3)

        def forward(self, x):
            return x + torch.randn(x.shape, generator=self.g)

    model = Noisy()
    log = lw.trace(model, torch.zeros(3))
    state = model.g.get_state().clone()
    report = log.validate()
    assert report.skipped == {"randn_1_1": "draws from an explicit torch.Generator"}
    assert torch.equal(model.g.get_state(), state)


def test_predicate_sees_the_source_and_the_layer():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    seen: list[tuple[str, str]] = []

    def keep(op):
        seen.append((op.layer, op.source))
        return op.layer == "linear_1_1"

    log = lw.trace(model, torch.randn(2, 4), save=keep)
    assert [op.label for op in log.ops if op.saved] == ["linear_1_1"]
    assert all(
        isinstance(source, str) and source.endswith(".py:" + source.rsplit(":", 1)[1])
        for _, source in seen
    )


def test_unmatched_save_names_warn():
    with pytest.warns(UserWarning, match=r"\['lineer'\]"):
        lw.trace(nn.Linear(2, 2), torch.randn(1, 2), save=["lineer"])


def test_labels_never_collide_with_parameter_names():
    class Collide(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.output = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * self.output

    log = lw.trace(Collide(), torch.ones(3))
    labels = [n.label for n in log.nodes]
    assert len(labels) == len(set(labels)) == log.graph.number_of_nodes()
    assert log["output"].kind == "param" and log["output#2"].kind == "output"


def test_helper_called_from_two_lines_is_two_layers_but_a_loop_folds():
    def rotate(t):
        return torch.cat((-t[..., 1:], t[..., :1]), dim=-1)

    def forward(q, k):
        q2, k2 = rotate(q), rotate(k)
        for _ in range(3):
            q2 = rotate(q2)
        return q2 + k2

    log = lw.trace(FunctionModule(forward), (torch.randn(2, 4), torch.randn(2, 4)))
    cats = [op for op in log.ops if op.func == "cat"]
    assert [op.n_passes for op in cats] == [1, 1, 3, 3, 3]
    assert log.structure == "recurrent"  # the loop; q and k alone would be branching


def test_indexing_by_pass_layer_and_numpy_positions():
    model = nn.Linear(2, 2)

    def twice(x):
        for _ in range(2):
            x = model(x)
        return x.relu()

    log = lw.trace(FunctionModule(twice), torch.randn(1, 2))
    assert log["relu_1_2:1"] is log["relu_1_2"]
    with pytest.raises(KeyError, match="ran 2 times"):
        log["linear_1_1"]
    assert log[np.int64(1)] is log.ops[1]
    with pytest.raises(IndexError, match="the log has 3 ops"):
        log[3]


def test_compiled_modules_are_traced_eagerly():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    compiled = torch.compile(model)
    log = lw.trace(compiled, torch.randn(2, 3))
    assert [op.func for op in log.ops] == ["linear", "relu"]
    assert log.model_class == "Sequential"


def test_kv_cache_objects_in_the_output_are_walked():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50)).eval()
    log = lw.trace(model, (torch.randint(0, 50, (1, 4)),), {"use_cache": True})
    names = [n.label for n in log.outputs]
    assert names[0] == "output.logits"
    assert "output.past_key_values.layers.0.keys" in names
    assert log.structure == "branching"


def test_saved_values_carry_no_autograd_history():
    model = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    log = lw.trace(model, x)
    assert all(not t.requires_grad for n in log.nodes for t in n.activations or ())
    log.output.sum().backward()  # the user's output still has its graph
    assert x.grad is not None and model.weight.grad is not None


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


def test_inference_mode_view_written_through_its_base_replays():
    def view_then_write(x):
        y = x * 2
        v = y[0]
        y.mul_(10)
        return v + 1  # v changed through y

    with torch.inference_mode():
        log = lw.trace(FunctionModule(view_then_write), torch.randn(2, 3))
    assert log.validate().checked == len(log.ops)
