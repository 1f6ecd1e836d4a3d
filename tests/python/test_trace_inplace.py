"""Every way a forward pass can write into a tensor keeps earlier saved values intact."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from function_module import FunctionModule
from small_models import view_then_write
from torch import nn

import lens_widget as lw


def _conv_relu_inplace(x):
    y = x * 3
    return F.relu(y, True)  # inplace passed by position


def _out_kwarg(x):
    y = x + 1
    torch.mul(x, 2, out=y)  # writes into y through out=
    return y


def _module_inplace(x):
    y = x - 0.5
    return nn.ReLU(inplace=True)(y)


def _input_written(x):
    x.mul_(2)  # the model writes into its own input
    return x + 1


def _masked_index_copy(x):
    y = x.clone()
    y.masked_fill_(y > 0.5, 0.0)
    y.index_put_((torch.tensor([0]),), torch.tensor(9.0))
    y[1:2].copy_(torch.full((1, 3), 7.0))  # through a view
    return y


def _list_args(x):
    parts = [x, x * 2]
    stacked = torch.cat(parts, dim=0)
    stacked.add_(1)
    return stacked, parts[1]


@pytest.mark.parametrize(
    "fn",
    [
        _conv_relu_inplace,
        _out_kwarg,
        _module_inplace,
        _input_written,
        _masked_index_copy,
        _list_args,
    ],
)
def test_writes_keep_saved_values_and_replay(fn):
    x = torch.rand(2, 3)
    expected_input = x.clone()
    log = lw.trace(FunctionModule(fn), x.clone())
    # The input node holds the input as it was before the model wrote to it.
    assert torch.equal(log["input.0"].activation, expected_input)
    report = log.validate()
    assert report.checked == len(log.ops), report.skipped
    # Replaying the whole function on a fresh input gives the same saved output.
    reference = fn(expected_input.clone())
    reference = reference if isinstance(reference, tuple) else (reference,)
    for sink, want in zip(log.outputs, reference, strict=True):
        assert torch.equal(sink.activation, want)


def test_value_before_an_inplace_relu_is_saved_for_the_producer():
    x = torch.tensor([[-1.0, 2.0, -3.0]])
    log = lw.trace(FunctionModule(_conv_relu_inplace), x)
    assert torch.equal(log["mul_1_1"].activation, x * 3)  # negatives kept
    assert torch.equal(log["relu_1_2"].activation, torch.relu(x * 3))
    assert log["relu_1_2"].inplace


def test_out_kwarg_write_is_an_edge_and_a_copy():
    x = torch.ones(2, 3)
    log = lw.trace(FunctionModule(_out_kwarg), x)
    assert torch.equal(log["add_1_1"].activation, x + 1)
    assert log["mul_1_2"].parents == ["input.0", "add_1_1"]
    assert log["mul_1_2"].inplace


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


def test_inference_mode_view_written_through_its_base_replays():
    with torch.inference_mode():
        log = lw.trace(FunctionModule(view_then_write), torch.randn(2, 3))
    assert log.validate().checked == len(log.ops)


class _WritesUnseen(nn.Module):
    """Writes where no TorchFunctionMode sees it (torch functions disabled): into an op's
    output, into the input, and into its own weight."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.weight
        with torch._C.DisableTorchFunction(), torch.no_grad():
            y.add_(100)
            x.add_(1)
            self.weight.add_(1)
        return y + 0


def test_unseen_writes_are_reported_for_ops_and_inputs_not_parameters():
    x = torch.zeros(3)
    with pytest.warns(UserWarning, match="could not see") as caught:
        lw.trace(_WritesUnseen(), x)
    message = str(caught[0].message)
    assert "input.0" in message and "mul_1_1" in message
    assert "weight" not in message  # a parameter's own writes are the user's business


def test_seen_write_to_a_parameter_keeps_its_saved_value():
    class Decay(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.full((3,), 2.0))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * self.weight
            with torch.no_grad():
                self.weight.mul_(0.5)  # seen: the saved weight is copied first
            return y + self.weight

    model = Decay()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = lw.trace(model, torch.ones(3))
    assert torch.equal(log["weight"].activation, torch.full((3,), 2.0))
    assert torch.equal(model.weight.detach(), torch.ones(3))
    assert log.validate().checked == len(log.ops)


def test_a_write_through_data_is_what_later_reads_of_the_tensor_see() -> None:
    """x.data has a version counter of its own: a write through it (WGAN-style weight
    clipping) moves nothing the tracer reads on x. Later reads of x link to the write, the
    value x had before keeps its copy, and the trace validates."""

    class Clip(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = nn.Linear(6, 6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.l.weight.data.clamp_(-0.05, 0.05)
            z = self.l(x) * 1
            z.data.add_(1)
            return z + 0

    torch.manual_seed(0)
    model = Clip()
    before = model.l.weight.detach().clone()
    log = lw.trace(model, torch.randn(4, 6))
    assert log["linear_1_3"].parents == ["input.0", "clamp_1_2", "l.bias"]
    assert log["add_2_7"].parents == ["add_1_6"]
    assert torch.equal(log["l.weight"].activation, before)  # as it was when first read
    assert log.validate().checked == len(log.ops) == 7


def test_a_write_through_a_view_is_what_later_reads_of_its_base_see() -> None:
    """A cache written a slice at a time (transformers 4's MambaCache:
    ``ssm_states[i].copy_(x)``) and then returned: the base's new value is an
    ``as_strided_scatter`` op of the written view into the value before, so the output links
    to the write, holds what the model returned, and replays."""

    class SliceCache(nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            cache = torch.zeros(3, 2, 4)
            for i in range(3):
                cache[i].copy_(x * (i + 1))
            cache[:, 1].mul_(2)  # a strided view of the base
            return x.sum() + 0, cache

    x = torch.randn(2, 4)
    log = lw.trace(SliceCache(), x)
    _, want = SliceCache()(x)
    cache_sink = log.outputs[1]
    producer = log[cache_sink.parents[0]]
    assert producer.func == "as_strided_scatter"
    assert torch.equal(producer.activation, want)
    assert torch.equal(log["zeros_1_1"].activation, torch.zeros(3, 2, 4))  # kept as it was
    # Each write's scatter reads the base's value before it and the view just written.
    scatters = [op for op in log.ops if op.func == "as_strided_scatter"]
    assert len(scatters) == 4
    assert scatters[0].parents[0] == "zeros_1_1"
    assert [log[s.parents[1]].func for s in scatters] == ["copy_"] * 3 + ["mul_"]
    assert scatters[1].parents[0] == scatters[0].label
    assert log.validate().checked == len(log.ops)
    # the features that see each call's result see the write's record, not the scatter's
    timed = lw.trace(SliceCache(), x, timing=True)
    assert all(op.time_ms is not None for op in timed.ops if op.func in ("copy_", "mul_"))
