"""torch's functions written in Python (F.layer_norm, F.dropout, Tensor.split) go straight
into the recorder while a trace runs (capture/python_wrappers.py): recorded as before, and
torch's route into a mode is untouched for everyone else and put back after."""

from __future__ import annotations

import sys
import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode, handle_torch_function

import lens_widget as lw

WRAPPER_MODULES = [torch.nn.functional, torch.functional, sys.modules["torch._tensor"]]


class Calls(TorchFunctionMode):
    """Records (function name, types) of every call it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, tuple[type, ...]]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append((getattr(func, "__name__", str(func)), tuple(types)))
        return func(*args, **(kwargs or {}))


class Norm(nn.Module):
    def __init__(self, inner_mode: Calls | None = None) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))
        self.inner_mode = inner_mode
        self.during: list[object] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.during = [m.handle_torch_function for m in WRAPPER_MODULES]
        if self.inner_mode is not None:
            with self.inner_mode:
                return self._body(x)
        return self._body(x)

    def _body(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x, (4,), self.weight)  # a Python wrapper
        a, b = y.split(2, dim=-1)  # Tensor.split: torch/_tensor.py
        return F.dropout(torch.cat([b, a], -1), 0.5, training=False)


def test_python_wrappers_are_recorded_from_the_users_line():
    model = Norm()
    log = lw.trace(model, torch.randn(3, 4))
    assert [op.func for op in log.ops] == ["layer_norm", "split", "cat", "dropout"]
    norm = log.ops[0]
    assert norm.parents == ["input.0", "weight"] and norm.shape == (3, 4)
    assert norm.source.startswith(__file__) and "F.layer_norm(" in norm.source_code
    assert "y.split(" in log.ops[1].source_code


@pytest.mark.parametrize("raises", [False, True])
def test_torchs_function_is_back_after_a_trace(raises):
    model = Norm()
    x = torch.randn(3, 4) if not raises else torch.randn(3, 5)  # a shape layer_norm refuses
    if raises:
        with pytest.raises(RuntimeError):
            lw.trace(model, x)
    else:
        lw.trace(model, x)
    assert all(f is not handle_torch_function for f in model.during)  # the stand-in ran
    assert all(m.handle_torch_function is handle_torch_function for m in WRAPPER_MODULES)


def test_a_users_mode_inside_the_forward_sees_what_it_sees_untraced():
    plain_mode, traced_mode = Calls(), Calls()
    x = torch.randn(3, 4)
    Norm(plain_mode)(x)
    log = lw.trace(Norm(traced_mode), x)
    assert traced_mode.seen == plain_mode.seen
    assert ("layer_norm", (torch.Tensor,)) in plain_mode.seen  # types from torch's route
    assert [op.func for op in log.ops] == ["layer_norm", "split", "cat", "dropout"]


def test_another_threads_calls_take_torchs_route_during_a_trace():
    """A thread with its own mode calls F.layer_norm while the trace runs: its mode sees
    the types torch's route gives, and the trace records nothing of it."""
    started, done = threading.Event(), threading.Event()
    other = Calls()
    results: list[torch.Tensor] = []

    def work() -> None:
        ones = torch.ones(2, 4)
        started.wait(10)
        with other:
            results.append(F.layer_norm(ones, (4,)))
        done.set()

    class Waits(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()
            assert done.wait(10)
            return F.relu(x)

    thread = threading.Thread(target=work)
    thread.start()
    log = lw.trace(Waits(), torch.randn(2, 4))
    thread.join(10)
    assert other.seen == [("layer_norm", (torch.Tensor,))]
    assert torch.equal(results[0], torch.zeros(2, 4))
    assert [op.func for op in log.ops] == ["relu"]
