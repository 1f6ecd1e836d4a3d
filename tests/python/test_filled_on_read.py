"""A plain trace leaves its records' links, source lines and output metadata to be filled on
their first read (log/filled_on_read.py): every way to a record sees it whole, and the log is
the one a trace filling them at once makes."""

from __future__ import annotations

import gc
import threading
import weakref

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import lens_widget as lw

FIELDS = (
    "label", "kind", "func", "index", "layer", "pass_index", "n_passes", "module",
    "module_stack", "function", "shape", "dtype", "device", "nbytes", "requires_grad",
    "shapes", "params", "parents", "parent_args", "children", "from_input", "feeds_output",
    "source", "source_code", "inplace",
)  # fmt: skip


def _offset(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1  # a helper of the model's code: a function group


class Looped(nn.Module):
    """A loop (first passes relabelled ``:1``), a helper, an output made by no op (a
    constant), one straight from the input and one from a parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))
        self.table = torch.arange(3.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        for _ in range(3):
            x = torch.tanh(self.cell(x))
        return _offset(x) * self.scale, self.table, x


def _fields(log: lw.ModelLog) -> list[tuple[object, ...]]:
    return [tuple(getattr(node, name) for name in FIELDS) for node in log.nodes]


def _traced() -> lw.ModelLog:
    torch.manual_seed(0)
    return lw.trace(Looped(), torch.randn(2, 4))


def test_the_log_read_later_equals_the_one_filled_at_once():
    """A save predicate reads each record as its op runs, so that trace fills them at once:
    both logs are the same, field by field."""
    torch.manual_seed(0)
    model, x = Looped(), torch.randn(2, 4)
    later = lw.trace(model, x, save="all")
    at_once = lw.trace(model, x, save=lambda op: True)
    assert "_details_later" in vars(later) and "_details_later" not in vars(at_once)
    assert _fields(later) == _fields(at_once)
    assert later.modules == at_once.modules  # made on the first read, the same infos
    assert later.modules[""].n_ops == len(later.ops) and later.modules["cell"].n_passes == 3
    # the constant returned as it is: a source named after its output, linked to its sink
    assert later["output.1#2"].parents == ["output.1"]
    assert later["output.1"].children == ["output.1#2"]
    assert later["tanh_1_2:1"].children == ["linear_1_1:2"]
    assert later["output.2"].from_input and later["output.2"].parents == ["tanh_1_2:3"]


def test_every_way_to_a_record_sees_it_filled():
    reads = {
        "log[label]": lambda log: log["linear_1_1:1"],
        "log.by_label": lambda log: log.by_label["linear_1_1:1"],
        "log[i]": lambda log: log[0],
        "iteration": lambda log: next(iter(log)),
        "log.ops": lambda log: log.ops[0],
        "log.nodes": lambda log: next(n for n in log.nodes if n.kind == "op"),
        "log[module]": lambda log: log["cell:1"],
    }
    for way, read in reads.items():
        node = read(_traced())
        assert node.label == "linear_1_1:1", way
        assert node.parents == ["input.0", "cell.weight", "cell.bias"], way
        assert node.shape == (2, 4) and node.dtype == "float32" and node.device == "cpu", way
        assert node.source.startswith(__file__) and "self.cell(x)" in node.source_code, way
    graph = _traced().graph
    assert set(graph.predecessors("linear_1_1:1")) == {"input.0", "cell.weight", "cell.bias"}


def test_the_modules_read_first_are_made_whole():
    """`log.modules` read before any record: each module's info, its output labels too
    (made from the labels, given in the same fill)."""
    log = _traced()
    info = log.modules["cell"]
    assert (info.class_name, info.parent, info.n_passes, info.n_ops) == ("Linear", "", 3, 3)
    assert [label for labels in info.outputs.values() for label in labels] == [
        "linear_1_1:1", "linear_1_1:2", "linear_1_1:3"
    ]  # fmt: skip
    assert list(log.modules) == ["", "cell"]


def _children_read_by_two_threads_at_once(log: lw.ModelLog) -> list[list[str]]:
    start = threading.Barrier(2)
    seen: list[list[str]] = []

    def read() -> None:
        start.wait()
        seen.append(list(log["input.0"].children))

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seen


def test_two_threads_reading_at_once_fill_once():
    for _ in range(20):
        seen = _children_read_by_two_threads_at_once(_traced())
        assert seen == [["linear_1_1:1"], ["linear_1_1:1"]]


def test_a_users_mode_at_the_first_read_sees_nothing():
    class Calls(TorchFunctionMode):
        def __init__(self) -> None:
            super().__init__()
            self.funcs: list[object] = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    log = _traced()
    with Calls() as mode:
        assert log.ops[0].device == "cpu"
    assert mode.funcs == []


def test_a_meta_models_values_are_dropped_on_the_first_read():
    with torch.device("meta"):
        model = nn.Linear(4, 4)
    log = lw.trace(model, torch.randn(2, 4, device="meta"))
    assert [n.activations for n in log.nodes] == [None] * len(log.nodes)
    assert log.ops[0].device == "meta"


def test_a_log_waiting_for_its_fill_keeps_no_model_alive():
    """The fill holds what it reads, not the recorder's book (whose module tracker holds the
    model): a model dropped before its log is read is freed at once, no cycle left."""
    model = Looped()
    log = lw.trace(model, torch.randn(2, 4), save=None)
    gone = weakref.ref(model)
    was_enabled = gc.isenabled()
    gc.disable()  # freed by reference counting alone, not by the cyclic collector
    try:
        del model
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
    assert log["linear_1_1:1"].parents == ["input.0", "cell.weight", "cell.bias"]
