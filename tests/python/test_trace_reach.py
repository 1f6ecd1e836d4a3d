"""Where the tracer cannot see everything: tensors made out of its sight are named by the line
that uses them (item 9), and models nest as deep under a trace as in a plain forward
(item 5)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw


def test_tensors_made_out_of_sight_are_named_by_the_line_that_uses_them():
    def forward(x: torch.Tensor) -> torch.Tensor:
        legacy = torch.Tensor([1.0, 2.0, 3.0])  # no TorchFunctionMode sees these two
        shared = torch.from_numpy(np.arange(3, dtype=np.float32))
        y = x * legacy  # first use of legacy
        return y + shared  # first use of shared

    log = lw.trace(FunctionModule(forward), torch.ones(3))
    consts = [n for n in log.nodes if n.kind == "const"]
    assert len(consts) == 2
    lines = [n.source_code for n in consts]
    assert lines == [
        "y = x * legacy  # first use of legacy",
        "return y + shared  # first use of shared",
    ]
    assert all(n.source.startswith(__file__ + ":") for n in consts)
    assert consts[0].source == log.ops[0].source and consts[1].source == log.ops[1].source
    assert consts[0].children == [log.ops[0].label]


def _depth_model(depth: int) -> nn.Module:
    model: nn.Module = nn.Linear(2, 2)
    for _ in range(depth):
        model = nn.Sequential(model)
    return model


def _deepest_plain_depth() -> int:
    """The deepest nesting of Sequentials a plain forward runs at the current limit."""
    low, high = 1, sys.getrecursionlimit()
    x = torch.randn(1, 2)
    while low < high:
        mid = (low + high + 1) // 2
        try:
            _depth_model(mid)(x)
        except RecursionError:
            high = mid - 1
        else:
            low = mid
    return low


def test_a_trace_nests_as_deep_as_a_plain_forward():
    limit = sys.getrecursionlimit()
    deepest = _deepest_plain_depth()
    model = _depth_model(deepest)
    log = lw.trace(model, torch.randn(1, 2))
    assert [op.func for op in log.ops] == ["linear"]
    assert len(log.ops[0].module_stack) == deepest
    assert sys.getrecursionlimit() == limit


def test_the_recursion_limit_comes_back_also_when_the_forward_raises():
    limit = sys.getrecursionlimit()

    def forward(x: torch.Tensor) -> torch.Tensor:
        raise ValueError("no")

    with pytest.raises(ValueError):
        lw.trace(FunctionModule(forward), torch.ones(1))
    assert sys.getrecursionlimit() == limit


def test_modules_with_hooks_and_modules_compiled_in_place_are_tracked_and_put_back():
    """Module calls are tracked through a stand-in for torch's `_call_impl`: a module with
    hooks still runs them (through torch's own `_call_impl`), and one compiled in place
    (`module.compile()`, which torch calls without `_call_impl`) runs eagerly while traced,
    as a group of its own, and keeps its compiled call afterwards."""
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
    seen: list[str] = []
    model[0].register_forward_pre_hook(lambda m, a: seen.append("pre"))
    model[2].compile()
    compiled = model[2]._compiled_call_impl
    call_impl = nn.Module.__dict__["_call_impl"]
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda m, a, o: seen.append(type(m).__name__)
    )
    try:
        log = lw.trace(model, torch.randn(1, 2))
    finally:
        handle.remove()
    assert [(op.func, op.module) for op in log.ops] == [
        ("linear", "0"),
        ("relu", "1"),
        ("linear", "2"),
    ]
    assert seen == ["pre", "Linear", "ReLU", "Linear", "Sequential"]
    assert model[2]._compiled_call_impl is compiled
    assert nn.Module.__dict__["_call_impl"] is call_impl
