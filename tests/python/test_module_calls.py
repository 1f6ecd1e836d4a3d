"""How module calls reach the tracker (lens_widget/capture/module_calls.py): torch's
``nn.Module._call_impl`` keeps its identity and gets the stand-in's code for the time of a
trace, and nothing of it is left afterwards, also when the forward raises; where someone
else replaced ``_call_impl``, the trace still records module calls and leaves theirs."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest
import torch
from cleanup_checks import assert_globals_unchanged, global_snapshot
from torch import nn

import lens_widget as lw

_TORCH_MODULE = vars(sys.modules["torch.nn.modules.module"])
_NAME = "_lens_widget_module_calls"


class Probe(nn.Module):
    """Notes what nn.Module._call_impl is while its forward runs."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 2)
        self.fail = fail
        self.seen: list[tuple[Any, Any, bool]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        impl = nn.Module.__dict__["_call_impl"]
        self.seen.append((impl, impl.__code__, _NAME in _TORCH_MODULE))
        y = self.linear(x).relu()
        if self.fail:
            raise ValueError("stop")
        return y


def test_torch_function_keeps_its_identity_and_gets_its_code_back() -> None:
    torch_impl = nn.Module.__dict__["_call_impl"]
    torch_code = torch_impl.__code__
    before = global_snapshot()
    model = Probe()
    log = lw.trace(model, torch.randn(1, 2))
    [(impl, code, named)] = model.seen
    # While traced: the same function object (no class attribute set, so no subclass's
    # attribute cache is invalidated), running other code, which reads its state by name.
    assert impl is torch_impl
    assert code is not torch_code and code.co_name == "_tracked_call_impl"
    assert named
    assert [(op.func, op.module) for op in log.ops] == [("linear", "linear"), ("relu", "")]
    assert nn.Module.__dict__["_call_impl"] is torch_impl
    assert torch_impl.__code__ is torch_code
    assert _NAME not in _TORCH_MODULE
    assert_globals_unchanged(before)


def test_a_forward_that_raises_leaves_nothing_behind() -> None:
    torch_impl = nn.Module.__dict__["_call_impl"]
    torch_code = torch_impl.__code__
    before = global_snapshot()
    with pytest.raises(ValueError, match="stop") as raised:
        lw.trace(Probe(fail=True), torch.randn(1, 2))
    assert [op.func for op in lw.partial_log(raised.value).ops] == ["linear", "relu"]
    assert torch_impl.__code__ is torch_code
    assert _NAME not in _TORCH_MODULE
    assert_globals_unchanged(before)


def test_another_thread_runs_torch_code_unrecorded_while_a_trace_runs() -> None:
    """The other thread's module calls run the stand-in's code too (the function object is
    shared): they go to torch's own code and are not recorded."""
    other = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    started, release = threading.Event(), threading.Event()
    results: list[torch.Tensor] = []

    class Waits(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()
            assert release.wait(10)
            return x.sin()

    def run_other() -> None:
        assert started.wait(10)
        results.append(other(torch.ones(1, 2)))
        release.set()

    thread = threading.Thread(target=run_other)
    thread.start()
    log = lw.trace(Waits(), torch.ones(1, 2))
    thread.join(10)
    assert [op.func for op in log.ops] == ["sin"]
    assert torch.equal(results[0], other(torch.ones(1, 2)))


def test_someone_elses_call_impl_is_kept_and_module_calls_still_recorded() -> None:
    """A library that replaced nn.Module._call_impl: the trace sets the class attribute
    instead (torch's code is not theirs to swap), calls theirs for every module call, and
    puts theirs back."""
    torch_impl = nn.Module.__dict__["_call_impl"]
    calls: list[str] = []

    def theirs(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(module).__name__)
        return torch_impl(module, *args, **kwargs)

    nn.Module._call_impl = theirs  # type: ignore[method-assign]
    try:
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        log = lw.trace(model, torch.randn(1, 2))
        assert nn.Module.__dict__["_call_impl"] is theirs
    finally:
        nn.Module._call_impl = torch_impl  # type: ignore[method-assign]
    assert calls == ["Sequential", "Linear", "ReLU"]
    assert [(op.func, op.module) for op in log.ops] == [("linear", "0"), ("relu", "1")]
    assert torch_impl.__code__.co_name == "_call_impl"
