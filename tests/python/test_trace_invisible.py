"""The tracer's own bookkeeping is invisible: a user's mode or Tensor subclass around a trace
sees exactly the calls of a plain forward, and the tracer reads no tensor values, so it
never synchronises a device (issue 11, item 1 and "GPU-ready")."""

from __future__ import annotations

import gc
import threading

import pytest
import torch
from function_module import FunctionModule
from torch import nn
from torch.overrides import TorchFunctionMode

import lens_widget as lw


class CallLog(TorchFunctionMode):
    """A user's own mode: writes down every call it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.calls.append(getattr(func, "__qualname__", None) or repr(func))
        return func(*args, **(kwargs or {}))


class Logged(torch.Tensor):
    """A user's Tensor subclass: writes down every call made on it."""

    calls: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        cls.calls.append(getattr(func, "__qualname__", None) or repr(func))
        return super().__torch_function__(func, types, args, kwargs or {})


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh()).eval()


@pytest.mark.parametrize("save", ["all", None])
def test_an_outer_mode_sees_exactly_the_calls_of_a_plain_forward(save):
    model, x = _mlp(), torch.randn(3, 6)
    with CallLog() as plain:
        model(x)
    with CallLog() as traced:
        log = lw.trace(model, x, save=save)
    assert traced.calls == plain.calls
    assert len(log.ops) == 4


def test_a_tensor_subclass_input_sees_exactly_the_calls_of_a_plain_forward():
    model = _mlp()
    x = torch.randn(3, 6).as_subclass(Logged)
    Logged.calls = []
    model(x)
    plain = Logged.calls
    Logged.calls = []
    log = lw.trace(model, x)
    assert Logged.calls == plain
    assert [op.func for op in log.ops] == ["linear", "relu", "linear", "tanh"]


def test_a_nested_trace_adds_no_ops_to_the_outer_log():
    inner_model = _mlp()

    def outer_forward(x: torch.Tensor) -> torch.Tensor:
        inner = lw.trace(inner_model, x)
        return inner.output * 2

    outer = lw.trace(FunctionModule(outer_forward), torch.randn(3, 6))
    assert [op.func for op in outer.ops] == ["linear", "relu", "linear", "tanh", "mul"]


# Tensor methods that wait for the device (or read values on the host).
_SYNCING = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "nonzero")


def test_the_tracer_itself_calls_nothing_that_synchronises_the_device(monkeypatch):
    """Every syncing Tensor method is replaced by a spy; during a trace only the model's own
    calls (made from its forward, listed here) may reach them."""
    seen: list[str] = []

    def spy(name: str):  # noqa: ANN202
        original = getattr(torch.Tensor, name)

        def call(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            seen.append(name)
            return original(self, *args, **kwargs)

        return call

    for name in _SYNCING:
        monkeypatch.setattr(torch.Tensor, name, spy(name))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.bn = nn.BatchNorm1d(4)
            self.drop = nn.Dropout(0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.drop(self.bn(self.fc(x)))
            y[y > 0] = 1.0  # an in-place write through a mask
            y = torch.softmax(y, -1) + torch.randn_like(y)
            return y.relu_()

    model, x = Model().train(), torch.randn(5, 4)
    with torch.no_grad():
        model(x)
    plain = list(seen)
    seen.clear()
    log = lw.trace(model, x)
    assert seen == plain
    assert len(log.ops) > 8
    seen.clear()
    log.validate()  # replays may compare values: not part of the per-op path


def test_identity_outputs_in_a_container_leave_torch_functions_enabled():
    """The identity ops of a module that returns its inputs in a tuple are recorded with
    torch functions disabled; the ops after it must still be seen."""

    class PassThrough(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x, y

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.through = PassThrough()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = self.through(x, x * 2)
            return (a + b).relu()

    log = lw.trace(Model(), torch.ones(2))
    assert [op.func for op in log.ops] == ["mul", "identity", "identity", "add", "relu"]
    assert torch._C._is_torch_function_enabled()


def test_the_garbage_collector_is_left_as_found():
    """A trace hands its objects to gc's oldest generation (freeze + unfreeze) only when
    nothing is frozen: a pre-fork server's frozen objects stay frozen."""
    assert gc.isenabled()
    lw.trace(_mlp(), torch.randn(2, 6))
    assert gc.isenabled() and gc.get_freeze_count() == 0
    kept = [[]]
    gc.freeze()
    try:
        lw.trace(_mlp(), torch.randn(2, 6))
        assert gc.isenabled()
        assert not any(o is kept for o in gc.get_objects()), "a frozen object was unfrozen"
    finally:
        gc.unfreeze()


def test_traces_in_two_threads_record_their_own_modules_and_restore_module_call():
    """Module calls are tracked by a stand-in for nn.Module.__call__ while any trace runs;
    each thread's trace sees its own calls only, and the last one out puts it back."""
    original_call = nn.Module.__call__
    started = threading.Barrier(2)
    logs: dict[str, lw.ModelLog] = {}

    class Waits(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.fc = nn.Linear(width, width)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.wait(timeout=10)  # both traces are running now
            return self.fc(x).relu()

    def run(name: str, width: int) -> None:
        logs[name] = lw.trace(Waits(width), torch.randn(2, width))

    workers = [threading.Thread(target=run, args=(n, w)) for n, w in (("a", 3), ("b", 5))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert nn.Module.__call__ is original_call
    for name, width in (("a", 3), ("b", 5)):
        log = logs[name]
        assert [(op.func, op.module, op.shape) for op in log.ops] == [
            ("linear", "fc", (2, width)),
            ("relu", "", (2, width)),
        ]
        assert log.modules["fc"].n_passes == 1
