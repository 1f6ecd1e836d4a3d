"""Parameters made or materialised while a trace runs: a module built in the trace reads
as the ops that made its data; a lazy module's first forward traces.

``nn.Parameter(torch.empty(...))`` wraps the empty tensor without any call a mode sees; the
parameter used to become a source named after its first use (``input.kaiming_uniform``).
"""

from __future__ import annotations

import threading
import warnings

import pytest
import torch
from torch import nn

import lens_widget as lw


def op_parents(log: lw.ModelLog) -> dict[str, list[str]]:
    return {op.label: list(op.parents) for op in log.ops}


def test_a_linear_built_in_a_section_links_to_its_init_ops():
    torch.manual_seed(0)
    with lw.tracing() as t:
        lin = nn.Linear(3, 2)
        lin(torch.ones(1, 3)).sum()
    log = t.log
    assert [n.label for n in log.nodes if n.kind != "op"] == []  # no made-up sources
    parents = op_parents(log)
    assert parents["kaiming_uniform_1_3"] == ["empty_1_1"]
    assert parents["uniform_1_4"] == ["empty_2_2"]
    assert parents["linear_1_6"] == ["ones_1_5", "kaiming_uniform_1_3", "uniform_1_4"]
    assert torch.equal(log["kaiming_uniform_1_3"].activation, lin.weight.detach())
    assert log.validate().checked == len(log.ops)


def test_a_module_built_inside_forward_and_its_gradients():
    class BuildsOne(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.made = nn.Linear(3, 3)
            return self.made(x)

    model = BuildsOne()
    log = lw.trace(model, (torch.ones(2, 3),), backward=lambda out: out.sum())
    assert [n.label for n in log.nodes if n.kind == "input"] == ["input.0"]
    assert op_parents(log)["linear_1_5"] == ["input.0", "kaiming_uniform_1_3", "uniform_1_4"]
    leaves = {leaf.label: leaf for leaf in log.leaves.values()}
    assert set(leaves) == {"kaiming_uniform_1_3", "uniform_1_4"}
    assert torch.equal(leaves["kaiming_uniform_1_3"].grad, model.made.weight.grad)
    assert type(model.made.weight) is nn.Parameter


def test_parameter_new_is_put_back_also_when_the_forward_raises():
    original = nn.Parameter.__dict__["__new__"]

    class Raises(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            nn.Parameter(torch.zeros(2))
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as info:
        lw.trace(Raises(), (torch.ones(1),))
    assert nn.Parameter.__dict__["__new__"] is original
    assert [op.func for op in lw.partial_log(info.value).ops] == ["zeros"]


def test_another_threads_parameters_are_not_reported():
    made: list[nn.Parameter] = []
    with lw.tracing() as t:
        worker = threading.Thread(target=lambda: made.append(nn.Parameter(torch.ones(2))))
        worker.start()
        worker.join()
        (made[0] * 2).sum()
    # made where no mode saw it: a source, as any tensor from outside the section
    assert [n.kind for n in t.log.nodes][:1] == ["input"]


def test_a_lazy_module_materialises_its_parameters_on_the_traced_first_forward():
    """nn.LazyLinear's first forward sets ``weight.data``; the trace raised on reading the
    shape of the uninitialized parameter, before any op."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(2), nn.ReLU())
    log = lw.trace(model, (torch.randn(4, 3),), backward=lambda out: out.sum())
    assert type(model[0].weight) is nn.Parameter and model[0].weight.shape == (2, 3)
    assert log["0.weight"].shape == (2, 3)  # a param source, with the shape it got
    assert op_parents(log)["linear_1_5"] == ["input.0", "kaiming_uniform_1_3", "uniform_1_4"]
    assert torch.equal(log["0.weight"].grad, model[0].weight.grad)
    assert log.validate().checked == len(log.ops)


def test_a_lazy_module_built_in_forward_reads_as_its_data_without_warnings():
    class BuildsLazy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return nn.LazyLinear(2)(x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "overwritten in place by a call not seen"
        log = lw.trace(BuildsLazy(), (torch.randn(4, 3),))
    assert [n.kind for n in log.nodes if n.kind not in ("op", "output")] == ["input"]
    weight_init = next(op for op in log.ops if op.func == "kaiming_uniform_")
    assert log[weight_init.parents[0]].func == "empty"
    assert weight_init.shape == (2, 3)
    assert log.validate().checked == len(log.ops)
