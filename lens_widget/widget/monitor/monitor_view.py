"""The monitor view of a LensWidget (``LensWidget.from_monitor``): the graph of a training
run's first traced step, colored by the statistics of any traced step, updated live.

A mixin of LensWidget (its request handlers are found by name, like the others). A live
Monitor tells the widget of each new step through a listener that holds it weakly: the
monitor outlives the widget in most notebooks, and must not keep it (and its comm) alive.
"""

from __future__ import annotations

import weakref
from typing import Any, Self

from lens_widget.capture.monitor.monitor import Monitor
from lens_widget.log.model_log import ModelLog
from lens_widget.log.monitor.step_history import StepHistory, StepStats
from lens_widget.widget import requests
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.monitor.monitor_requests import (
    MonitorSource,
    kept_log,
    monitor_series,
    monitor_step,
)

# Why the inspector has no value to plot (the graph is a step's structure, without values)
MONITOR_VALUES = (
    "a monitored training run: its statistics over the steps are plotted below the graph, "
    "and its value at the steps kept whole"
)


def placeholder_log() -> ModelLog:
    """The graph shown before a monitor's first traced step: no op."""
    return ModelLog(
        model_class="(waiting for the first traced step)",
        nodes=[], modules={}, output=None, failed_op=None, elapsed=0.0, n_params=0,
        param_bytes=0, error=None,
    )  # fmt: skip


class StepListener:
    """`Monitor.on_step` listener: tells the widget of a new step, if it still exists."""

    def __init__(self, widget: MonitorView) -> None:
        self._widget = weakref.ref(widget)

    def __call__(self, stats: StepStats) -> bool:
        """False once the widget is gone: the monitor then drops this listener."""
        widget = self._widget()
        if widget is None:
            return False
        widget._monitor_added(stats)
        return True


class MonitorView:
    """What LensWidget adds for a monitor: `_monitor` (None for any other widget) and the
    "monitorStep", "monitorSeries" requests."""

    _monitor: MonitorSource | None = None
    monitor: Any  # LensWidget's synced traits
    step: Any

    @classmethod
    def from_monitor(cls, source: Monitor | StepHistory, **widget_kwargs: Any) -> Self:
        """The graph of a monitored training run (``lw.Monitor``, or the StepHistory of
        ``lw.load_monitor``) colored by a statistic of its ops at a step, a step slider,
        the ops that changed most, an op's statistics over the steps. A live Monitor's new
        steps show as they come (the slider follows the latest unless moved)."""
        if isinstance(source, Monitor):
            history = source.history
        elif isinstance(source, StepHistory):
            history = source
        else:
            raise TypeError(f"from_monitor takes a Monitor or a StepHistory, got {type(source)}")
        structure = history.structure or placeholder_log()
        widget = cls(None, model_log=structure, **widget_kwargs)  # pyright: ignore[reportCallIssue]  # LensWidget's constructor
        widget._monitor = MonitorSource(history)
        widget._set_log(structure)  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's: its payload says why no value
        widget.monitor = widget._monitor.info()
        if isinstance(source, Monitor):
            source.on_step(StepListener(widget))
        return widget

    def _monitor_added(self, stats: StepStats) -> None:
        """A new traced step (on the training thread): the first one brings the graph."""
        source = self._monitor
        if source is None:
            return
        # requests are answered on the comm's thread meanwhile (cell_gate.py): not mid-swap
        with self._requests_lock:  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's
            structure = source.history.structure
            if structure is not None and self._shown_log() is not structure:
                self._set_log(structure)  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's
            source.added(stats)
            info = source.info()
        self.monitor = info

    def _shown_log(self) -> ModelLog:
        return self._model_log  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's

    def _need_monitor(self) -> MonitorSource:
        if self._monitor is None:
            raise requests.RequestError(
                "this widget shows no monitor (LensWidget.from_monitor makes one that does)"
            )
        return self._monitor

    def _monitor_step(self, params: object) -> requests.Answer:
        return monitor_step(self._need_monitor(), params)

    def _monitor_series(self, params: object) -> requests.Answer:
        return monitor_series(self._need_monitor(), params)

    def _kept_activation(self, params: dict[str, object]) -> requests.Answer:
        """An "activation" request with `step`: the op's value in that kept step's log."""
        log = kept_log(self._monitor, params["step"])
        rest = {k: v for k, v in params.items() if k != "step"}
        return requests.activation(log.by_label, rest, DimNames(log.nodes))
