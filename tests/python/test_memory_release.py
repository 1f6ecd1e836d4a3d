"""What a trace, a traced training step or a widget made is freed the moment the user lets
go of it, by reference counting alone (issue #25, items 1 and 2).

Memory that only Python's cyclic collector can free piles up between its full runs (a
trace hands its objects to the oldest generation, which it scans rarely) and glibc keeps
the heap it grew into: repeated traced training steps grew the process by ~1.5 MiB each.
So these tests run with the collector off and check, with weak references, that the log,
its tensors, the autograd graph (through saved-tensor hooks) and the recorder's own objects
die when dropped; and that a trace leaves no object to the collector at all. RSS figures
per repetition are in bench/memory_bench.py.
"""

from __future__ import annotations

import collections
import gc
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.capture.backward.backward_capture import BackwardCapture
from lens_widget.capture.recorder import Recorder


@pytest.fixture
def gc_off() -> Iterator[None]:
    """The cyclic collector paused: what is freed meanwhile is freed by reference counting."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).train()


class Packed:
    """What the autograd graph holds for each tensor it saves (through saved-tensor hooks):
    weakly referenced, it tells when the graph is gone. Grad_fn nodes themselves take no
    weak reference. Detached: a saved output holding its own grad_fn would be a cycle."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor.detach()


@contextmanager
def graph_witnesses() -> Iterator[list[weakref.ref]]:
    """Weak references to what every autograd node made inside the block saved."""
    refs: list[weakref.ref] = []

    def pack(tensor: torch.Tensor) -> Packed:
        packed = Packed(tensor)
        refs.append(weakref.ref(packed))
        return packed

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda packed: packed.tensor):
        yield refs


def _log_tensors(log: Any) -> list[torch.Tensor]:
    found = [op.activation for op in log.ops if op.activations is not None]
    found += [g for op in log.ops for g in (op.grads or ()) if g is not None]
    found += [g for leaf in log.leaves.values() for g in leaf.grads if g is not None]
    return [t for t in found if isinstance(t, torch.Tensor)]


def _recorder_objects() -> int:
    """Recorders and backward captures that exist, alive or waiting for the collector."""
    return sum(issubclass(type(o), (Recorder, BackwardCapture)) for o in gc.get_objects())


def _dead(refs: list[weakref.ref]) -> bool:
    return all(ref() is None for ref in refs)


@pytest.mark.parametrize("save", ["all", None])
@pytest.mark.parametrize("backward", [True, False], ids=["step", "forward_only"])
def test_a_traced_training_step_is_freed_when_dropped(gc_off, save, backward):
    model, x = _mlp(), torch.randn(4, 8)
    recorders = _recorder_objects()
    with graph_witnesses() as saved_by_graph, lw.tracing(model, save=save, grads=True) as t:
        loss = model(x).pow(2).mean()
        if backward:
            loss.backward(retain_graph=True)  # the graph lives as long as the user's loss
    log = t.log
    tensors = [weakref.ref(v) for v in _log_tensors(log)]
    assert tensors or (save is None and not backward)  # save=None keeps the leaves' grads
    assert saved_by_graph and not _dead(saved_by_graph)
    log_ref = weakref.ref(log)
    del t, log, loss
    assert log_ref() is None, "the log waits for the cyclic collector"
    assert _dead(tensors), "the log's activations and gradients outlived it"
    assert _dead(saved_by_graph), "the autograd graph of the step outlived the user's loss"
    assert _recorder_objects() == recorders, "the recorder outlived the trace"


def test_a_log_given_to_the_user_alone_keeps_nothing_else_alive(gc_off):
    """lw.trace(..., backward=fn): the graph is freed by the backward, the log with the user."""
    model, x = _mlp(), torch.randn(4, 8)
    log = lw.trace(model, (x,), backward=lambda out: out.pow(2).mean())
    tensors = [weakref.ref(v) for v in _log_tensors(log)]
    log_ref = weakref.ref(log)
    del log
    assert log_ref() is None and _dead(tensors)


def _cyclic_garbage(step: Callable[[], None]) -> collections.Counter[str]:
    """Types of the objects `step` left that only the cyclic collector frees."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        step()
        gc.collect()
        return collections.Counter(type(o).__qualname__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _section_step(model: nn.Module, x: torch.Tensor) -> None:
    with lw.tracing(model, grads=True):
        model(x).pow(2).mean().backward()
    model.zero_grad(set_to_none=True)


def _trace(model: nn.Module, x: torch.Tensor) -> None:
    lw.trace(model, (x,), {"scale": torch.ones(1)})


class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _mlp()

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> dict[str, Any]:
        out = self.inner(x) * scale
        return {"out": out, "parts": (out[0], [out[1]])}  # nested outputs, named one by one


@pytest.mark.parametrize("step", [_trace, _section_step], ids=["trace", "traced_step"])
def test_a_trace_leaves_nothing_to_the_cyclic_collector(gc_off, step):
    model, x = _Scaled(), torch.randn(4, 8)
    if step is _section_step:
        model = model.inner
    step(model, x)  # warm-up: first-call caches
    garbage = _cyclic_garbage(lambda: step(model, x))
    assert not garbage, f"left to the cyclic collector: {dict(garbage.most_common(8))}"


def test_the_widget_payload_leaves_nothing_to_the_cyclic_collector(gc_off):
    from lens_widget.widget import wire
    from lens_widget.widget.payload import build_payload

    log = lw.trace(_Scaled(), (torch.randn(4, 8), torch.ones(1)))
    garbage = _cyclic_garbage(lambda: wire.encode(build_payload(log)))
    assert not garbage, f"left to the cyclic collector: {dict(garbage.most_common(8))}"


WIDGETS: dict[str, Callable[[nn.Module, torch.Tensor], lw.LensWidget]] = {
    "traced": lambda model, x: lw.LensWidget(model, (x,)),
    "from_log": lambda model, x: lw.LensWidget.from_log(lw.trace(model, (x,))),
    "compare": lambda model, x: lw.LensWidget.compare(
        lw.trace(model, (x,)), lw.trace(model, (x * 2,))
    ),
}


@pytest.mark.parametrize("make", WIDGETS.values(), ids=WIDGETS.keys())
def test_a_closed_widget_is_freed_when_dropped(gc_off, make):
    widget = make(_mlp(), torch.randn(4, 8))
    log = widget.model_log
    refs = [weakref.ref(widget), weakref.ref(log), weakref.ref(widget.layout)]
    tensors = [weakref.ref(v) for v in _log_tensors(log)]
    assert tensors
    widget.close()
    del widget, log
    assert _dead(refs), "the widget, its log or its Layout outlived close() and the user"
    assert _dead(tensors), "the widget's activations outlived it"


def test_a_layout_given_to_widgets_is_left_open_by_close():
    from ipywidgets import Layout

    model, x = _mlp(), torch.randn(4, 8)
    layout = Layout(height="300px")
    first = lw.LensWidget(model, (x,), layout=layout)
    second = lw.LensWidget.from_log(first.model_log, layout=layout)
    first.close()
    assert layout.comm is not None and second.layout is layout  # still the other's
    second.close()
    layout.close()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_garbage_from_before_a_trace_is_not_handed_to_the_oldest_generation():
    """A trace promotes the objects it made to gc's oldest generation, which is collected
    rarely; garbage the code before it left (a closed widget's per-instance class, a user's
    cycle) must not go with them, or it waits for a full collection."""
    assert gc.isenabled()
    model, x = _mlp(), torch.randn(4, 8)
    lw.trace(model, (x,))  # warm-up
    gc.collect()
    before = weakref.ref(_Cycle())  # young garbage
    lw.trace(model, (x,))
    gc.collect(1)  # the young generations only
    assert before() is None, "garbage made before the trace waits for a full collection"
