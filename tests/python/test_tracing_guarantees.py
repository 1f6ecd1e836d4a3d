"""`lw.tracing` keeps lw.trace's guarantees: the world comes out as a plain run leaves it
(also when the block raises), other threads are not recorded, nesting works, user modes
see plain calls."""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading

import pytest
import torch
from cleanup_checks import (
    assert_globals_unchanged,
    assert_modules_unchanged,
    assert_rng_equal,
    assert_state_equal,
    global_snapshot,
    module_snapshot,
    rng_state,
    seed_all,
)
from small_models import SmallNet
from torch import nn
from torch.overrides import TorchFunctionMode

import lens_widget as lw


def training_step(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = model(x)
    noise = torch.rand(out.shape)  # random numbers outside the model too
    return (out * noise).pow(2).mean()


def test_world_comes_out_as_a_plain_run_leaves_it():
    model = SmallNet().train()
    reference_model = copy.deepcopy(model)
    x = torch.randn(2, 3, 8, 8)
    modules_before = module_snapshot(model)
    globals_before = global_snapshot()
    call_before = nn.Module.__dict__["__call__"]
    limit = sys.getrecursionlimit()

    seed_all(0)
    plain = training_step(reference_model, x)
    rng_after_plain = rng_state()
    seed_all(0)
    with lw.tracing(model) as t:
        traced = training_step(model, x)
    assert_rng_equal(rng_state(), rng_after_plain)
    assert torch.equal(traced, plain)
    assert_state_equal(model, reference_model)  # BatchNorm statistics moved once, alike
    assert_modules_unchanged(model, modules_before, reference_model)
    assert_globals_unchanged(globals_before)
    assert nn.Module.__dict__["__call__"] is call_before
    assert sys.getrecursionlimit() == limit
    assert type(traced) is torch.Tensor
    assert {o.func for o in t.log.ops if o.module == ""} >= {"rand", "mul", "pow", "mean"}
    assert t.log.validate().checked == len(t.log.ops)


class StepFailed(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class FrozenError(Exception):
    code: int


def test_a_block_that_raises_gives_the_same_exception_and_a_partial_log():
    model = SmallNet().eval()
    x = torch.randn(2, 3, 8, 8)
    globals_before = global_snapshot()
    call_before = nn.Module.__dict__["__call__"]
    raised = StepFailed("loss went NaN")
    with pytest.raises(StepFailed) as info, lw.tracing(model) as t:
        y = model(x)
        y.sum()
        raise raised
    assert info.value is raised
    assert raised.lens_log is t.log
    assert lw.partial_log(raised) is t.log
    log = t.log
    assert isinstance(log.error, StepFailed) and log.failed_op is None
    assert log.ops[-1].func == "sum" and log.ops[-1].module == ""
    assert all(o.feeds_output for o in log.ops)
    assert_globals_unchanged(globals_before)
    assert nn.Module.__dict__["__call__"] is call_before


def test_an_op_that_raises_in_the_block_is_the_failed_op():
    a, b = torch.ones(2, 3), torch.ones(4, 5)
    with pytest.raises(RuntimeError) as info, lw.tracing() as t:
        c = a.exp()
        c @ b
    log = lw.partial_log(info.value)
    assert log is t.log
    assert log.failed_op == log.ops[-1].label and log.ops[-1].failed
    assert log.ops[-1].parents == [log.ops[0].label, "input.b"]
    assert torch._C._len_torch_function_stack() == 0


def test_an_exception_refusing_attributes_still_finds_its_log():
    with pytest.raises(FrozenError) as info, lw.tracing() as t:
        torch.ones(2).cos()
        raise FrozenError(3)
    assert not hasattr(info.value, "lens_log")
    assert lw.partial_log(info.value) is t.log
    assert [o.func for o in t.log.ops] == ["ones", "cos"]


def test_other_threads_are_not_recorded():
    model = nn.Linear(2, 2)
    ready, finished = threading.Event(), threading.Event()

    def worker() -> None:
        ready.wait(10)
        for _ in range(20):
            torch.cos(torch.ones(3))
            model(torch.ones(1, 2))  # the traced module, called from another thread
        finished.set()

    thread = threading.Thread(target=worker)
    thread.start()
    x = torch.ones(1, 2)
    with lw.tracing(model) as t:
        ready.set()
        y = model(x)
        assert finished.wait(10)
        y.sin()
    thread.join()
    log = t.log
    assert [o.func for o in log.ops] == ["linear", "sin"]
    assert log.modules[""].n_passes == 1


def test_trace_inside_a_section():
    model = SmallNet().eval()
    x = torch.randn(2, 3, 8, 8)
    alone = lw.trace(model, x)
    with lw.tracing(model) as t:
        inner = lw.trace(model, x)
        total = inner.output.sum()
    assert inner.labels == alone.labels
    # The section saw the forward the inner trace ran, and none of its bookkeeping.
    assert t.log.labels == [*alone.labels, f"sum_1_{len(alone.labels) + 1}"]
    assert torch.equal(t.log.ops[-1].activation, total)


def test_section_inside_a_traced_forward():
    sections: list[lw.ModelLog] = []

    class UsesSection(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with lw.tracing(self.inner) as t:
                y = self.inner(x).relu()
            sections.append(t.log)
            return y * 2

    log = lw.trace(UsesSection(), torch.randn(2, 3))
    assert [o.func for o in log.ops] == ["linear", "relu", "mul"]
    assert log.ops[0].module == "inner"
    assert [o.func for o in sections[0].ops] == ["linear", "relu"]
    assert sections[0].ops[0].module == ""  # the one positional module is the section's root
    assert sections[0]["weight"].kind == "param"


def test_nested_sections_both_record():
    x = torch.ones(3)
    with lw.tracing() as outer:
        a = x.exp()
        with lw.tracing() as inner:
            b = a.log()
        b.neg()
    assert [o.func for o in inner.log.ops] == ["log"]
    assert [o.func for o in outer.log.ops] == ["exp", "log", "neg"]
    assert inner.log.inputs[0].label == "input.a"


def test_a_tracing_object_records_one_block():
    t = lw.tracing()
    with pytest.raises(RuntimeError, match="before the block"):
        t.log  # noqa: B018
    with t:
        with pytest.raises(RuntimeError, match="still running"), t:
            pass
        with pytest.raises(RuntimeError, match="inside the with block"):
            t.log  # noqa: B018
        torch.zeros(1)
    assert [o.func for o in t.log.ops] == ["zeros"]
    with pytest.raises(RuntimeError, match="already recorded"), t:
        pass
    assert torch._C._len_torch_function_stack() == 0


class Counting(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_user_modes_see_only_the_plain_calls():
    model = SmallNet().eval()
    x = torch.randn(2, 3, 8, 8)

    def block() -> torch.Tensor:
        return model(x).pow(2).mean()

    seed_all(0)
    with Counting() as plain:
        expected = block()
    seed_all(0)
    with Counting() as around, lw.tracing(model, save=["head"], timing=True) as t:
        got = block()
    assert around.calls == plain.calls
    with lw.tracing(model) as t2, Counting() as inside:
        block()
    assert inside.calls == plain.calls
    assert torch.equal(got, expected)
    assert len(t.log.ops) == len(t2.log.ops) > 5
