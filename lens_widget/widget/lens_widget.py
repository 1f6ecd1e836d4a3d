"""The notebook widget: trace a model, sync its graph, answer activation requests."""

from __future__ import annotations

import os
import pathlib
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import anywidget
import ipywidgets
import torch
import traitlets
from IPython.display import display

from lens_widget.capture.interventions import InterventionFn
from lens_widget.capture.offload import offload_spec
from lens_widget.capture.rerun import WorldState, save_also
from lens_widget.capture.save_policy import SaveSpec
from lens_widget.capture.trace import trace
from lens_widget.compare.comparison import LogComparison, OpDiff, compare
from lens_widget.log.attention import has_attention_map
from lens_widget.log.model_log import DEFAULT_HTML_BYTES, ModelLog
from lens_widget.log.records import OpRecord
from lens_widget.widget import html_export, protocol, requests, wire
from lens_widget.widget.ablation import Ablation, ablation_request
from lens_widget.widget.bundle import MISSING_ESM, bundle_text
from lens_widget.widget.call_sites import keep_call_sites
from lens_widget.widget.cell_gate import cell_gate
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.metric_values import MetricError, side_outputs
from lens_widget.widget.monitor_view import MONITOR_VALUES, MonitorView
from lens_widget.widget.payload import NO_MODEL, build_payload
from lens_widget.widget.rank_view import RankView
from lens_widget.widget.state_note import STATE_NOTE_CSS, STATE_NOTE_HTML
from lens_widget.widget.view_ids import ViewIds

# The method answering each kind of protocol.REQUEST_KINDS ("firstNonfinite" ->
# "_first_nonfinite"), named once rather than on every message.
_HANDLER_NAMES = {kind: requests.handler_name(kind) for kind in protocol.REQUEST_KINDS}

_NO_MODEL_TO_ABLATE = (
    "this widget was built from a log: there is no model to re-run with the ablation"
)


def _graph_to_wire(payload: Mapping[str, Any], widget: LensWidget) -> bytes:
    """The `graph` trait as it travels and is saved in notebooks: wire.py's compact bytes
    (ipywidgets sends bytes as a binary buffer; js/src/kernel/wire.ts decodes them)."""
    return widget._wire_bytes(payload)


def _answer_message(widget: LensWidget, content: object, buffers: list[object]) -> None:
    widget._on_msg(widget, content, buffers)


class LensWidget(anywidget.AnyWidget, MonitorView, RankView):
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
    _css = bundle_text("widget.css", "") + STATE_NOTE_CSS

    # In Python the GraphPayload dict; on the wire and in saved notebooks compact bytes.
    graph = traitlets.Dict().tag(sync=True, to_json=_graph_to_wire)
    selected = traitlets.Unicode("").tag(sync=True)
    view = traitlets.Enum(("unrolled", "rolled"), default_value="unrolled").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    # The monitor view (from_monitor, widget/monitor_view.py): its steps; the step shown
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
        self.on_msg(_answer_message)
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

    def save_html(
        self,
        path: str | os.PathLike[str],
        max_bytes: int = DEFAULT_HTML_BYTES,
        *,
        weights: bool = False,
    ) -> pathlib.Path:
        """Write this widget as one self-contained HTML page: it opens in any browser with no
        Jupyter and no network, as interactive as here (expand, collapse, rolled/unrolled,
        search), in the view, expansion, selection and height shown now. Clicking an op plots its
        activation from views embedded in the page, pooled (or, past that, left out, which
        the page says) so that the file stays under `max_bytes`. `weights=True` adds plots of
        parameters and buffers (slower: their statistics read every weight). Returns the path.
        """
        out = pathlib.Path(path)
        out.write_bytes(self._page(max_bytes, weights=weights).html)
        return out

    def _page(self, max_bytes: int, *, weights: bool) -> html_export.Page:
        """The standalone page of this widget as it is now (save_html, lw.show)."""
        state = self.get_state(["graph", "view", "selected", "expanded", "height"])
        return html_export.render_page(
            self._model_log, state, max_bytes=max_bytes, weights=weights, diffs=self._diffs
        )

    def _ipython_display_(self) -> None:
        # The widget, then a note that shows only where the widget cannot be drawn: a
        # reopened notebook saved without widget state (state_note.py).
        repr_bundle = self._repr_mimebundle_  # None once closed (ipywidgets' close)
        bundle = repr_bundle() if repr_bundle is not None else None
        if bundle is None:  # closed: no view, only the text (as anywidget shows it)
            display({"text/plain": repr(self)}, raw=True)
            return
        data, metadata = bundle
        display(data, metadata=metadata, raw=True)
        display({"text/html": STATE_NOTE_HTML}, raw=True)

    def _wire_bytes(self, payload: Mapping[str, Any]) -> bytes:
        # ipywidgets serialises the state on every open and update: encode each graph once
        if self._wire is None or self._wire[0] is not payload:
            self._wire = (payload, wire.encode(payload))
        return self._wire[1]

    # ---- tracing ----

    def _trace(
        self, save: SaveSpec, intervene: Mapping[str, InterventionFn] | None = None
    ) -> ModelLog:
        assert self._model is not None
        model, inputs, kwargs, timing = self._model, self._inputs, self._kwargs, self._timing
        offload = self._offload
        if intervene is not None:  # an ablation: a failing pass is an error, not a view
            return trace(
                model, inputs, kwargs, save=save, timing=timing, intervene=intervene, **offload
            )
        try:
            return trace(model, inputs, kwargs, save=save, timing=timing, **offload)
        except Exception as err:
            partial = getattr(err, "lens_log", None)
            # Nothing ran (bad inputs, or a failure before the first op): an empty graph
            # would hide the real error, so raise it as a plain call would.
            if partial is None or not partial.ops:
                raise
            # Show what ran up to the failure instead of losing the whole graph.
            warnings.warn(
                f"the forward pass raised {type(err).__name__}: {err}; showing the partial trace",
                RuntimeWarning,
                stacklevel=3,
            )
            return partial

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

    def rerun(self, node_id: str | None = None) -> None:
        """Trace the model again, also saving `node_id`'s activation (labels are stable).

        `node_id` is an op label, or a rolled-view layer id to save every pass of it.
        """
        if self._model is None:
            raise RuntimeError("this widget was built from a log; there is no model to re-run")
        if node_id is not None:
            rolled_ids = self._view_ids.ids["rolled"]
            label = requests.rerun_target(self._records, {"id": node_id}, rolled_ids)
            labels = self._rolled_targets().get(label, [label])  # every pass of a rolled node
            for name in (*labels, *(n for lb in labels for n in self._attention_inputs(lb))):
                if name not in self._extra_save:
                    self._extra_save.append(name)
        self.status = "re-running the model…"
        try:
            log = self._replay()
        finally:
            self.status = ""
        self._show_ablation(None, None)  # the clean run changed: back to the plain trace
        self._set_log(log)

    def _rolled_targets(self) -> Mapping[str, list[str]]:
        """Rolled node -> its passes' labels, for the ids that name one: every rolled node
        while the rolled view is shown; otherwise those that are no op's label (a layer
        that ran several times), since the unrolled view names single ops."""
        passes = self._view_ids.rolled_passes
        if self.view == "rolled":
            return passes
        return {k: v for k, v in passes.items() if k not in self._records}

    def ablate(self, target: str, kind: str = "zero", dim: int | None = None) -> None:
        """Re-trace with op `target`'s output zeroed (`kind="zero"`) or replaced by its mean
        over `dim` (`kind="mean"`), and show the comparison clean (A) vs ablated (B), as
        `LensWidget.compare` does. `target` is an op label, or a rolled layer (every pass).
        `end_ablation()` goes back to the plain trace; the model, RNG and buffers come out
        as they were."""
        if self._model is None:
            raise RuntimeError(_NO_MODEL_TO_ABLATE)
        params: dict[str, object] = {"id": target, "kind": kind}
        if dim is not None:
            params["dim"] = dim
        ablation = ablation_request(self._records, self._rolled_targets(), self._dim_names, params)
        clean = self._model_log
        self.status = f"ablating {ablation.target}…"
        try:
            ablated = self._replay({label: ablation.function() for label in ablation.passes})
            comparison = compare(clean, ablated)
        finally:
            self.status = ""
        self._show_ablation(ablation, comparison)
        self._set_log(clean)

    def end_ablation(self) -> None:
        """Back from an ablation's comparison to the plain trace."""
        if self._ablation is not None:
            self._show_ablation(None, None)
            self._set_log(self._model_log)

    @property
    def ablation(self) -> Ablation | None:
        """The ablation shown (`ablate`), else None."""
        return self._ablation

    def _show_ablation(self, ablation: Ablation | None, comparison: LogComparison | None) -> None:
        # only a widget with a model ablates, and its comparison is only ever an ablation's
        self._ablation = ablation
        self._comparison = comparison
        self._diffs = {d.label: d for d in comparison} if comparison is not None else None

    def _attention_inputs(self, target: str) -> list[str]:
        """Ops feeding an attention op (or layer): its maps are computed from them."""
        if target in self._records:
            records = [self._records[target]]
        else:
            records = [r for r in self._records.values() if r.layer == target]
        return [
            parent
            for r in records
            if has_attention_map(r)
            for parent in r.parents
            if self._records[parent].kind == "op"
        ]

    def _replay(self, intervene: Mapping[str, InterventionFn] | None = None) -> ModelLog:
        """Trace again from the initial RNG state and buffers, then put the present ones back."""
        assert self._model is not None and self._initial is not None
        current = WorldState.capture(self._model)
        self._initial.restore(self._model)
        try:
            log = self._trace(save_also(self._save, self._extra_save), intervene)
        finally:
            current.restore(self._model)
        return keep_call_sites(log, self._model_log)

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

    # ---- requests from the frontend ----

    def _activation(self, params: object) -> requests.Answer:
        if isinstance(params, dict) and "step" in params:  # a monitor's kept step
            return self._kept_activation(params)
        diffs = self._diffs
        if diffs is None:
            return requests.activation(self._records, params, self._dim_names)

        def other_side(label: str, side: str) -> tuple[torch.Tensor, ...]:
            try:
                return side_outputs(diffs, label, side, self._comparison)
            except MetricError as e:
                raise requests.RequestError(str(e)) from e

        return requests.activation(self._records, params, self._dim_names, other_side)

    def _attention(self, params: object) -> requests.Answer:
        return requests.attention(self._records, params)

    def _op_details(self, params: object) -> requests.Answer:
        return requests.op_details(self._model_log, params)

    def _module_details(self, params: object) -> requests.Answer:
        return requests.module_info(self._model_log, params, self._model)

    def _metrics(self, params: object) -> requests.Answer:
        return requests.metrics(self._model_log, params, self._diffs)

    def _first_nonfinite(self, params: object) -> requests.Answer:
        return requests.first_nonfinite(self._model_log, params)

    def _rerun(self, params: object) -> requests.Answer:
        label = requests.rerun_target(self._records, params, self._view_ids.ids["rolled"])
        if self._model is None:
            raise requests.RequestError("this widget was built from a log; it cannot re-run")
        self.rerun(label)
        return {"ok": True}, []

    def _ablate(self, params: object) -> requests.Answer:
        if self._model is None:
            raise requests.RequestError(_NO_MODEL_TO_ABLATE)
        p = requests.request_params(params, {"id", "kind", "dim"}, {"id", "kind"})
        dim = p.get("dim")
        self.ablate(p["id"], p["kind"], dim)  # pyright: ignore[reportArgumentType]  # checked in ablate
        return {"ok": True}, []

    def _end_ablation(self, params: object) -> requests.Answer:
        requests.no_params(params)
        self.end_ablation()
        return {"ok": True}, []

    def _on_msg(self, _widget: object, content: object, _buffers: list[object]) -> None:
        handlers: dict[str, requests.Handler] = {
            kind: getattr(self, name) for kind, name in _HANDLER_NAMES.items()
        }

        def answer() -> None:
            # one request at a time: a queued re-run runs on the cell's thread while
            # read-only requests go on arriving on the comm's (cell_gate.py)
            with self._requests_lock:
                reply = requests.handle(content, handlers)
            if reply is not None:
                self.send(reply[0], reply[1])

        req_id = requests.runs_model(content) if self._model is not None else None
        if req_id is None:
            answer()  # it only reads what was saved: at once, also while a cell runs
        elif not self._gate.run_or_queue(answer):
            self.send(requests.waiting(req_id), [])
