"""lw.Monitor's statistics made on a worker thread while the step runs
(capture/monitor/background_stats.py): equal to the batch after the step, the worker's
summary taken only for a value the log still holds unwritten since it was read, and the
worker gone with the step, also when the step raised."""

from __future__ import annotations

import copy
import os
import threading
import time

import numpy as np
import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.capture.monitor import background_stats
from lens_widget.capture.monitor import monitor as monitor_module
from lens_widget.capture.monitor.background_stats import BackgroundStats, Summaries, stats_of
from lens_widget.capture.monitor.monitor import step_stats
from lens_widget.capture.tracing import Tracing
from lens_widget.log.model_log import ModelLog
from lens_widget.log.stats import activation_stats

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class Block(nn.Module):
    """Views of saved outputs (same values, another shape or order), zeros (ReLU), and a
    saved output written in place after it was used (the trace copies it first)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 256)
        self.fc2 = nn.Linear(256, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        wide = h.view(-1, 512).t()  # views of h: the same values
        r = torch.relu(h)
        s = r * 2
        out = self.fc2(r) + wide.sum() + s.sum()
        s.mul_(0.5)  # written after sum read it: the log keeps its value from before
        return out + s.mean()


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lens_widget stats"]


def _traced_step(model: nn.Module, x: torch.Tensor) -> tuple[ModelLog, Summaries]:
    background = BackgroundStats()
    section = Tracing(
        (model,), {}, save="all", grads=True, timing=False, intervene=None,
        features=(background,),
    )  # fmt: skip
    with section:
        model(x).square().mean().backward()
    return section.log, background.finish()


def _taken(tensors: list[torch.Tensor], summaries: Summaries) -> int:
    """How many of `tensors` stats_of answers from the worker's summaries."""
    answers = stats_of(tensors, summaries)
    return sum(
        1
        for tensor, stats in zip(tensors, answers, strict=True)
        if (entry := summaries.get(id(tensor))) is not None and entry[2] is stats
    )


def test_the_workers_statistics_equal_the_batch_after_the_step() -> None:
    torch.manual_seed(0)
    log, summaries = _traced_step(Block(), torch.randn(32, 64))
    from_worker = step_stats(0, log, True, summaries)
    batch = step_stats(0, log, True)
    np.testing.assert_array_equal(from_worker.activation, batch.activation)
    assert from_worker.gradient is not None and batch.gradient is not None
    np.testing.assert_array_equal(from_worker.gradient, batch.gradient)
    # ...and the worker did make them: every float output and gradient but the value the
    # trace copied before the write (the log holds the copy, which the worker never read)
    outputs = [op.activations[0] for op in log.ops if op.activations]
    grads = [g for op in log.ops if (g := op.grad) is not None]
    written = next(op for op in log.ops if op.func == "mul")
    assert written.activations is not None and id(written.activations[0]) not in summaries
    assert _taken(outputs, summaries) == len(outputs) - 1
    assert _taken(grads, summaries) == len(grads)
    assert not _worker_threads()


def test_a_value_written_after_the_worker_read_it_is_summarised_again() -> None:
    tensor = torch.randn(4096)
    background = BackgroundStats()
    background.grad_noted(tensor)
    summaries = background.finish()
    read = summaries[id(tensor)][2]
    assert stats_of([tensor], summaries) == [read] and _taken([tensor], summaries) == 1
    tensor.add_(5.0)  # its version moves: the summary is of the value before
    again = stats_of([tensor], summaries)
    assert _taken([tensor], summaries) == 0
    assert again == activation_stats([tensor]) and again[0].mean == pytest.approx(read.mean + 5)
    copy = tensor.clone()  # the same values in another tensor: not the one the worker read
    assert _taken([copy], summaries) == 0 and stats_of([copy], summaries) == again


def test_the_worker_summarises_what_it_is_handed_between_its_takes_and_at_the_end() -> None:
    # it wakes every _PAUSE seconds and when the step ends, not per value handed over
    first = [torch.randn(1000) for _ in range(3)]
    last = [torch.randn(1000) for _ in range(3)]
    background = BackgroundStats()
    for tensor in first:
        background.grad_noted(tensor)
    time.sleep(3 * background_stats._PAUSE)  # taken while the step runs
    taken_before_the_end = sum(id(t) in background._done for t in first)
    for tensor in last:
        background.grad_noted(tensor)
    summaries = background.finish()  # these are taken when the step ends
    assert taken_before_the_end == len(first)
    assert _taken(first + last, summaries) == len(first) + len(last)
    assert stats_of(first + last, summaries) == activation_stats(first + last)
    assert not _worker_threads()


def test_the_worker_leaves_what_it_does_not_summarise_to_the_batch() -> None:
    ints, half = torch.arange(100), torch.randn(100).half()
    background = BackgroundStats()
    background.grad_noted(ints)
    background.grad_noted(half)
    summaries = background.finish()
    assert summaries == {}
    assert stats_of([ints, half], summaries) == activation_stats([ints, half])


def test_the_worker_ends_with_each_step_also_when_it_raises() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    mon = lw.Monitor(model, every=1)
    for _ in range(3):
        with mon.step():
            model(torch.randn(4, 8)).sum().backward()
    assert not _worker_threads()
    with pytest.raises(RuntimeError), mon.step():
        model(torch.randn(4, 3))  # wrong width: raises in the first Linear
    assert not _worker_threads()
    assert mon.steps == [0, 1, 2, 3]
    assert not np.isnan(mon.history.steps[0].activation[:, 0]).all()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_a_worker_runs_only_with_a_core_that_torchs_threads_leave_free() -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    mon = lw.Monitor(model, every=1)
    threads = torch.get_num_threads()
    seen: dict[int, int] = {}
    try:
        for n in (1, len(os.sched_getaffinity(0))):
            torch.set_num_threads(n)
            with mon.step():
                model(torch.randn(4, 8)).sum().backward()
                seen[n] = len(_worker_threads())
    finally:
        torch.set_num_threads(threads)
    assert list(seen.values()) == [1, 0]
    # the step without a worker has its statistics all the same, from the batch
    first, second = mon.history.steps
    assert first.activation.shape == second.activation.shape
    assert not np.isnan(second.activation[:, 0]).all()


def _monitored_training(model: nn.Module, steps: int) -> lw.Monitor:
    torch.manual_seed(3)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    mon = lw.Monitor(model, every=1)
    for _ in range(steps):
        with mon.step():
            model(torch.randn(32, 64)).square().mean().backward()
            opt.step()
            opt.zero_grad()
    return mon


@pytest.mark.parametrize("spare", [True, False], ids=["worker", "batch"])
def test_a_monitored_training_has_the_same_history_with_or_without_the_worker(
    monkeypatch: pytest.MonkeyPatch, spare: bool
) -> None:
    torch.manual_seed(0)
    start = Block()
    monkeypatch.setattr(monitor_module, "core_to_spare", lambda: False)
    batch = _monitored_training(copy.deepcopy(start), 3)
    monkeypatch.setattr(monitor_module, "core_to_spare", lambda: spare)
    other = _monitored_training(copy.deepcopy(start), 3)
    for a, b in zip(batch.history.steps, other.history.steps, strict=True):
        np.testing.assert_array_equal(a.activation, b.activation)
        assert a.gradient is not None and b.gradient is not None
        np.testing.assert_array_equal(a.gradient, b.gradient)
