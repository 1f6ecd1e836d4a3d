"""The notebook widget: trace a model, sync its graph, answer activation requests.

This module holds LensWidget's synced traits, its constructors and the log it shows (the
payload built from it, the trait checks); its other concerns are mixins, each in a module
of its own: the page and the display (page_output.py), re-running the model and ablations
(model_reruns.py), answering requests (request_dispatch.py), the monitor view
(monitor_view.py), the rank view (rank_view.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import anywidget
import ipywidgets
import torch
import traitlets

from lens_widget.capture.offload.offload import offload_spec
from lens_widget.capture.rerun import WorldState
from lens_widget.capture.save_policy import SaveSpec
from lens_widget.compare.comparison import LogComparison, OpDiff, compare
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord
from lens_widget.widget import wire
from lens_widget.widget.ablation import Ablation
from lens_widget.widget.bundle import MISSING_ESM, bundle_text
from lens_widget.widget.cell_gate import cell_gate
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.model_reruns import ModelReruns
from lens_widget.widget.monitor.monitor_view import MONITOR_VALUES, MonitorView
from lens_widget.widget.page_output import PageOutput
from lens_widget.widget.payload import NO_MODEL, build_payload
from lens_widget.widget.ranks.rank_view import RankView
from lens_widget.widget.request_dispatch import RequestDispatch, answer_message
from lens_widget.widget.state_note import STATE_NOTE_CSS
from lens_widget.widget.view_ids import ViewIds


def _graph_to_wire(payload: Mapping[str, Any], widget: LensWidget) -> bytes:
    """The `graph` trait as it travels and is saved in notebooks: wire.py's compact bytes
    (ipywidgets sends bytes as a binary buffer; js/src/kernel/wire.ts decodes them)."""
    return widget._wire_bytes(payload)


class LensWidget(
    anywidget.AnyWidget, PageOutput, ModelReruns, RequestDispatch, MonitorView, RankView
):
    """Every op of one forward pass as an interactive graph; click a node to plot its output.

    >>> w = LensWidget(model, x)            # traces model(x); w.model_log is the ModelLog
    >>> w.view = "rolled"; w.selected = "linear_1_1"

    ``height=900`` makes the graph 900 px tall (200-5000; the handle under it drags it too;
    by default it fills the notebook's visible height, 620 px at least).
    ``timing=True`` traces with per-op times (see `lens_widget.trace`), for the "time" overlay.
    ``offload=path, memory_budget=...`` keep saved values past the budget on disk (as in
    `lens_widget.trace`); clicking an op reads its value from there.
    """

    _esm = bundle_text("widget.js", MISSING_ESM)
    # The widget's own rules travel inside the bundle and are put into `el` (so they apply in a
    # shadow root too: js/src/render/styleScope.ts); this is the page's rule for the state note.
    _css = STATE_NOTE_CSS

    # In Python the GraphPayload dict; on the wire and in saved notebooks compact bytes.
    graph = traitlets.Dict().tag(sync=True, to_json=_graph_to_wire)
    selected = traitlets.Unicode("").tag(sync=True)
    view = traitlets.Enum(("unrolled", "rolled"), default_value="unrolled").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    # The monitor view (from_monitor, widget/monitor/monitor_view.py): its steps; the step shown
    monitor = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
    step = traitlets.Int(-1, min=-1).tag(sync=True)  # -1: follow the latest step
    # The graph's height in px; the handle under it drags it (js/src/controls/heightHandle.ts).
    # None: the frontend picks it from the visible height of the notebook around it.
    height = traitlets.Int(None, allow_none=True, min=200, max=5000).tag(sync=True)

    def __init__(
        self,
        model: torch.nn.Module | None,
        inputs: Any = (),
        kwargs: dict[str, Any] | None = None,
        *,
        save: SaveSpec = "all",
        timing: bool = False,
        offload: str | os.PathLike[str] | None = None,
        memory_budget: int | str | None = None,
        model_log: ModelLog | None = None,
        comparison: LogComparison | None = None,
        **widget_kwargs: Any,
    ) -> None:
        self._own_layout: ipywidgets.Layout | None = None  # set once ipywidgets made it
        self._model = model
        self._comparison = comparison
        # A's label -> the matched op of B (the difference overlay and the inspector's sides)
        self._diffs: dict[str, OpDiff] | None = (
            {d.label: d for d in comparison} if comparison is not None else None
        )
        self._inputs = inputs
        self._kwargs = dict(kwargs or {})
        self._save = save
        self._timing = timing  # per-op time_ms (trace(..., timing=True)), also on re-runs
        # Saved values past the budget go to disk (trace's offload=), also on re-runs
        self._offload = {"offload": offload, "memory_budget": memory_budget}
        offload_spec(offload, memory_budget)  # a bad path or budget raises before tracing
        self._extra_save: list[str] = []  # labels saved on request by "rerun"
        self._initial: WorldState | None = None
        self._wire: tuple[Mapping[str, Any], bytes] | None = None  # (payload, its bytes)
        self._ablation: Ablation | None = None  # shown as a comparison: clean (A) vs ablated (B)
        self._plain: tuple[ModelLog, dict[str, Any]] | None = None  # a log and its payload
        self._requests_lock = threading.RLock()
        # told of cells from now on (this one included), so re-runs never race them
        self._gate = cell_gate()
        if model_log is None:
            if model is None:
                raise ValueError("LensWidget needs a model to trace (or use LensWidget.from_log)")
            # Re-runs replay this exact state, so they reproduce the pass the user is looking at.
            self._initial = WorldState.capture(model)
            model_log = self._trace(save)
        self._set_log(model_log, sync=False)
        super().__init__(graph=self._payload, **widget_kwargs)
        # A plain function, not the bound method: the widget's own dispatcher holding its
        # bound method is a cycle, which kept the widget and its log (every saved tensor)
        # until Python's cyclic collector ran, after close() and the last user reference.
        self.on_msg(answer_message)
        # The Layout that ipywidgets made for this widget (none when the caller gave one):
        # ipywidgets registers it like any widget and close() leaves it registered.
        self._own_layout = None if "layout" in widget_kwargs else self.layout

    @classmethod
    def from_log(cls, log: ModelLog, **widget_kwargs: Any) -> LensWidget:
        """Show an existing log (from `lens_widget.trace`); re-running is then unavailable."""
        return cls(None, model_log=log, **widget_kwargs)

    @classmethod
    def compare(cls, a: ModelLog, b: ModelLog, **widget_kwargs: Any) -> LensWidget:
        """A's graph colored by how much each op differs in B (`lw.compare(a, b)`; relative
        L2 by default, max_abs and cosine in the metric picker). Ops that ran in one run only
        are marked; the inspector plots A, B and A−B of a clicked op."""
        comparison = compare(a, b)
        return cls(None, model_log=a, comparison=comparison, **widget_kwargs)

    @property
    def comparison(self) -> LogComparison | None:
        """The comparison shown (LensWidget.compare), else None."""
        return self._comparison

    # Not `log`: ipywidgets reports errors through `self.log`, its logger.
    @property
    def model_log(self) -> ModelLog:
        """The ModelLog currently shown."""
        return self._model_log

    def _wire_bytes(self, payload: Mapping[str, Any]) -> bytes:
        # ipywidgets serialises the state on every open and update: encode each graph once
        if self._wire is None or self._wire[0] is not payload:
            self._wire = (payload, wire.encode(payload))
        return self._wire[1]

    def _set_log(self, log: ModelLog, *, sync: bool = True) -> None:
        self._model_log = log
        if self._plain is None or self._plain[0] is not log:
            self._plain = (log, dict(build_payload(log)))
        self._payload = dict(self._plain[1])
        if self._comparison is not None:
            self._payload["compare"] = {
                "onlyA": list(self._comparison.only_a),
                "onlyB": list(self._comparison.only_b),
            }
        if self._ablation is not None:
            self._payload["ablation"] = self._ablation.info()
        ranks = self.ranks_info()
        if ranks is not None:  # the rank picker (from_logs)
            self._payload["ranks"] = ranks
        if self._model is None:  # the frontend offers no re-run, no ablation
            self._payload["noRerun"] = NO_MODEL if self._monitor is None else MONITOR_VALUES
        self._records: Mapping[str, OpRecord] = log.by_label
        self._dim_names = DimNames(log.nodes)
        self._view_ids = ViewIds(self._payload)
        if sync:
            self.graph = self._payload
            if self.selected and self._view_ids.convert(self.selected, self.view) is None:
                self.selected = ""

    def close(self) -> None:
        """Close the widget (its views disappear from the notebook) and the Layout ipywidgets
        made for it, which would otherwise stay registered for the life of the kernel."""
        layout, self._own_layout = self._own_layout, None
        super().close()
        if layout is not None and layout is self.layout:
            layout.close()

    # ---- trait validation ----

    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> str:
        return self._view_ids.check_selected(proposal["value"], self.view)

    @traitlets.validate("expanded")
    def _validate_expanded(self, proposal: dict[str, Any]) -> list[str]:
        return self._view_ids.check_expanded(proposal["value"])

    @traitlets.observe("view")
    def _on_view(self, change: dict[str, Any]) -> None:
        # Keep the selection on the same op when switching views.
        if self.selected:
            self.selected = self._view_ids.convert(self.selected, change["new"]) or ""
