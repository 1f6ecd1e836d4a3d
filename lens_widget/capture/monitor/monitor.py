"""`lw.Monitor`: every op's statistics over the steps of a training run.

Each step runs inside ``with mon.step():``. Steps 0, every, 2*every... are traced with
``lw.tracing`` (gradients too with ``grads=True``); after the step the statistics of every
op's output and gradient are computed in one batch (log/stats.py) into a `StepStats` row
block (log/monitor/step_history.py), and the step's log is dropped unless `keep` asks for it. The
other steps run with nothing of lens_widget active. Listeners (the live widget) are told of
each new step on the training thread, as it arrives.

Like ModelLog, what users do with a monitor in the layers above (files, TensorBoard, the
widget) are methods that import, inside their body, the one module FACADE names.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from lens_widget.capture.monitor.background_stats import (
    BackgroundStats,
    Summaries,
    core_to_spare,
    stats_of,
)
from lens_widget.capture.partial_log import partial_log
from lens_widget.capture.tracing import Tracing, tracing
from lens_widget.log.model_log import ModelLog
from lens_widget.log.monitor.step_history import (
    STAT_NAMES,
    OpIndex,
    StepHistory,
    StepStats,
    stats_row,
)
from lens_widget.log.nonfinite import NotSavedError

if TYPE_CHECKING:
    import pandas as pd

# Monitor method -> the module (above capture) whose function it calls (as ModelLog.FACADE)
FACADE = {
    "save": "lens_widget.store.monitor.monitor_file",
    "to_tensorboard": "lens_widget.store.monitor.tensorboard_export",
    "widget": "lens_widget.widget.monitor.monitor_widget",
}

KeepRule = Callable[[StepStats], bool]
Listener = Callable[[StepStats], object]


class Monitor:
    """Watches `model_or_modules` (one module, several, or {name: module}) over training.

    ``every``: the i-th ``step()`` (from 0) is traced when ``i % every == 0``. ``grads``: the
    gradients of the backward run in the step are watched too. ``stats``: the statistics
    kept (default all of log.step_history.STAT_NAMES). ``keep``: which traced steps keep
    their whole ModelLog in `kept`: None (none), "nonfinite" (the first step where an op's
    output or gradient holds NaN/Inf), "all", or a predicate on the step's StepStats.
    """

    def __init__(
        self,
        model_or_modules: torch.nn.Module | Sequence[torch.nn.Module] | Mapping[str, Any],
        *,
        every: int = 1,
        grads: bool = True,
        stats: Sequence[str] | None = None,
        keep: str | KeepRule | None = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be a positive int (trace every n-th step), got {every!r}")
        if keep not in (None, "nonfinite", "all") and not callable(keep):
            raise ValueError(
                f'keep must be None, "nonfinite", "all" or a function of the step\'s statistics, '
                f"got {keep!r}"
            )
        unknown = sorted(set(stats or ()) - set(STAT_NAMES))
        if unknown:
            raise ValueError(f"unknown statistics {unknown}; there are {', '.join(STAT_NAMES)}")
        self._modules: tuple[Any, ...] = ()
        self._named: dict[str, Any] = {}
        if isinstance(model_or_modules, torch.nn.Module):
            self._modules = (model_or_modules,)
        elif isinstance(model_or_modules, Mapping):
            self._named = dict(model_or_modules)
        else:
            self._modules = tuple(model_or_modules)
        tracing(*self._modules, save=None, **self._named)  # bad modules raise here, not later
        self.every = every
        self.grads = grads
        self.keep = keep
        self.history = StepHistory(
            every=every, grads=grads, stats=tuple(stats) if stats is not None else STAT_NAMES
        )
        self.kept = self.history.kept  # step -> its whole ModelLog
        self._next = 0  # the index of the next step()
        self._listeners: list[Listener] = []

    # ---- running ------------------------------------------------------------------------

    @property
    def steps(self) -> list[int]:
        """The traced steps, in order."""
        return self.history.step_numbers

    @contextmanager
    def step(self) -> Iterator[None]:
        """One training step. Traced when it is the i-th and ``i % every == 0``; otherwise
        nothing of lens_widget is active while it runs."""
        index = self._next
        self._next += 1
        if index % self.every:
            yield
            return
        # With a core to spare, each saved value is summarised on a worker thread while the
        # step runs (background_stats.py); else all of them after it, in one batch.
        background = BackgroundStats() if core_to_spare() else None
        try:  # (the worker runs from here: the finally below ends it)
            # The statistics are of ops' values only: the parameters' values are not copied
            # before the optimizer writes them, unless a kept log will show them.
            section = Tracing(
                self._modules, self._named, save="all", grads=self.grads, timing=False,
                intervene=None, features=(background,) if background is not None else (),
                copy_sources=self.keep is not None,
            )  # fmt: skip
            with section:
                yield
        except BaseException as err:
            log = partial_log(err)
            if log is not None:  # the failing step, whole: its statistics and its log
                self._record(index, log, _summaries(background), failed=True)
            raise
        finally:
            _summaries(background)  # the worker ends with the step, also when it raised
        self._record(index, section.log, _summaries(background))

    def on_step(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(step_stats)` after each traced step (on the training thread); the
        function returned stops it. A listener returning False is dropped (a view gone)."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def _record(
        self, index: int, log: ModelLog, summaries: Summaries, failed: bool = False
    ) -> None:
        """The step's statistics (those `summaries` has made already taken from it); its log
        kept when it failed or `keep` asks for it."""
        stats = step_stats(index, log, self.grads, summaries)
        self.history.add(stats)
        if self.history.structure is None:
            self.history.structure = without_values(log)
        keep = self.keep
        if (
            failed
            or keep == "all"
            or (keep == "nonfinite" and stats.nonfinite and not self._kept_nonfinite())
            or (callable(keep) and keep(stats))
        ):
            self.kept[index] = own_values(log)
        for listener in list(self._listeners):
            if listener(stats) is False:
                self._listeners.remove(listener)

    def _kept_nonfinite(self) -> bool:
        return any(s.nonfinite for s in self.history.steps[:-1] if s.step in self.kept)

    # ---- reading ------------------------------------------------------------------------

    def to_pandas(self) -> pd.DataFrame:
        """One row per (step, op, side) (see StepHistory.to_pandas). Needs pandas."""
        return self.history.to_pandas()

    def first_nonfinite(self) -> tuple[int, str] | None:
        """(step, op label) of the op that first produced NaN/Inf from finite inputs, in the
        first traced step where one did; None when no traced step had one."""
        return self.history.first_nonfinite()

    # ---- the facade (FACADE) ------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the history (and the kept logs) into the directory `path`; read it back with
        ``lw.load_monitor(path)``. Columnar: docs/log-format.md#monitor-files."""
        from lens_widget.store.monitor.monitor_file import save_history

        return save_history(self.history, path)

    def to_tensorboard(self, logdir: str | os.PathLike[str]) -> Path:
        """One TensorBoard scalar series per op and statistic, grouped by module (needs the
        tensorboard package: ``pip install lens_widget[tensorboard]``)."""
        from lens_widget.store.monitor.tensorboard_export import write_tensorboard

        return write_tensorboard(self.history, logdir)

    def widget(self) -> Any:
        """A LensWidget that shows the history and follows new steps as they arrive."""
        from lens_widget.widget.monitor.monitor_widget import monitor_widget

        return monitor_widget(self)


def _summaries(background: BackgroundStats | None) -> Summaries:
    """What the step's worker summarised (waiting for it to finish); none without one."""
    return background.finish() if background is not None else {}


def without_values(log: ModelLog) -> ModelLog:
    """A copy of `log`'s structure (nodes, modules, links, metadata) holding no tensor: no
    values, gradients, replay calls or output, so it keeps nothing of the step alive."""
    nodes = []
    for node in log.nodes:
        twin = copy.copy(node)
        twin.activations = twin.grads = twin.replay = None
        nodes.append(twin)
    leaves = {
        name: dataclasses.replace(leaf, grads=(None,) * len(leaf.grads))
        for name, leaf in log.leaves.items()
    }
    return dataclasses.replace(
        log, nodes=nodes, output=None, error=None, leaves=leaves, label_index=None
    )


def own_values(log: ModelLog) -> ModelLog:
    """`log` with every saved value and gradient its own copy: the training goes on, and
    its in-place writes (the optimizer's to the weights and its state, zero_grad) would
    otherwise change the values a kept step shows."""
    copies: dict[int, torch.Tensor] = {}

    def own(tensor: torch.Tensor | None) -> torch.Tensor | None:
        if tensor is None:
            return None
        copy = copies.get(id(tensor))
        if copy is None:
            copy = copies[id(tensor)] = tensor.detach().clone()
        return copy

    with torch._C.DisableTorchFunction(), torch.no_grad():
        for node in log.nodes:
            if node.activations is not None:
                node.activations = tuple(own(t) for t in node.activations)  # pyright: ignore[reportAttributeAccessIssue]  # own() of a tensor is a tensor
            if node.grads is not None:
                node.grads = tuple(own(g) for g in node.grads)
        for leaf in log.leaves.values():
            leaf.grads = tuple(own(g) for g in leaf.grads)
    return log


def step_stats(
    index: int, log: ModelLog, grads: bool, summaries: Summaries | None = None
) -> StepStats:
    """The statistics of every op of `log` (its first output and its gradient); those a
    worker made while the step ran taken from `summaries` (background_stats.py)."""
    ops = log.ops
    shape = (len(ops), len(STAT_NAMES))
    # One batch over the first outputs (what a row describes) and the gradients
    firsts = [op for op in ops if op.activations]
    with_grad = [op for op in ops if op.grad is not None] if grads else []
    tensors = [op.activations[0] for op in firsts] + [op.grad for op in with_grad]  # pyright: ignore[reportOptionalSubscript]  # filtered just above
    computed = stats_of(tensors, summaries or {})
    of_output = dict(zip(map(id, firsts), computed[: len(firsts)], strict=True))
    of_grad = dict(zip(map(id, with_grad), computed[len(firsts) :], strict=True))
    rows = [stats_row(of_output.get(id(op))) for op in ops]
    activation = np.array(rows, dtype=np.float64).reshape(shape)
    gradient = None
    if grads:
        rows = [stats_row(of_grad.get(id(op))) for op in ops]
        gradient = np.array(rows, dtype=np.float64).reshape(shape)
    labels = {op.label for op in ops}
    outputs = tuple(
        (address, made[-1])
        for address, info in log.modules.items()
        if info.outputs and (made := info.outputs[max(info.outputs)]) and made[-1] in labels
    )
    index_ = OpIndex(
        tuple(op.label for op in ops), tuple(op.module for op in ops),
        tuple(op.func for op in ops), outputs,
    )  # fmt: skip
    stats = StepStats(index, index_, activation, gradient)
    stats.first_nonfinite = _first_nonfinite(log, stats)
    return stats


def _first_nonfinite(log: ModelLog, stats: StepStats) -> tuple[str, str] | None:
    """The op that first turned finite values into NaN/Inf: in the forward (its output), else
    in the backward (its gradient: the last op in forward order whose gradient is non-finite
    while the gradients of the ops it fed were finite)."""
    if not stats.nonfinite:
        return None
    try:
        op = log.first_nonfinite()
    except NotSavedError:
        op = None
    if op is not None:
        return op.label, "activation"
    if stats.gradient is None:
        return None
    nan, inf = STAT_NAMES.index("nan"), STAT_NAMES.index("inf")
    bad = np.nan_to_num(stats.gradient[:, nan]) + np.nan_to_num(stats.gradient[:, inf]) > 0
    row = {label: i for i, label in enumerate(stats.ops.labels)}
    for i in reversed(np.flatnonzero(bad).tolist()):
        children = [row[c] for c in log.ops[i].children if c in row]
        if not any(bad[c] for c in children):
            return log.ops[i].label, "gradient"
    return None
