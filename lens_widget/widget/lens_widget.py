"""The notebook widget: trace a model, sync its graph, answer activation requests."""

from __future__ import annotations

import pathlib
import warnings
from collections.abc import Mapping
from typing import Any

import anywidget
import torch
import traitlets

from lens_widget.capture.rerun import WorldState, save_also
from lens_widget.capture.save_policy import SaveSpec
from lens_widget.capture.trace import trace
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord
from lens_widget.widget import requests, wire
from lens_widget.widget.checks import cut, quote
from lens_widget.widget.payload import build_payload

_STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"
# The bundle is a build output; without it the package must still import and say why.
_MISSING_ESM = (
    "export default { render({ el }) { el.textContent = "
    "'lens_widget frontend not built: run `make`'; } };"
)


def _asset(name: str, fallback: str) -> pathlib.Path | str:
    path = _STATIC / name
    return path if path.is_file() else fallback


def _graph_to_wire(payload: Mapping[str, Any], widget: LensWidget) -> bytes:
    """The `graph` trait as it travels and is saved in notebooks: wire.py's compact bytes
    (ipywidgets sends bytes as a binary buffer; js/src/kernel/wire.ts decodes them)."""
    return widget._wire_bytes(payload)


class LensWidget(anywidget.AnyWidget):
    """Every op of one forward pass as an interactive graph; click a node to plot its output.

    >>> w = LensWidget(model, x)            # traces model(x); w.model_log is the ModelLog
    >>> w.view = "rolled"; w.selected = "linear_1_1"
    """

    _esm = _asset("widget.js", _MISSING_ESM)
    _css = _asset("widget.css", "")

    # In Python the GraphPayload dict; on the wire and in saved notebooks compact bytes.
    graph = traitlets.Dict().tag(sync=True, to_json=_graph_to_wire)
    selected = traitlets.Unicode("").tag(sync=True)
    view = traitlets.Enum(("unrolled", "rolled"), default_value="unrolled").tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        model: torch.nn.Module | None,
        inputs: Any = (),
        kwargs: dict[str, Any] | None = None,
        *,
        save: SaveSpec = "all",
        model_log: ModelLog | None = None,
        **widget_kwargs: Any,
    ) -> None:
        self._model = model
        self._inputs = inputs
        self._kwargs = dict(kwargs or {})
        self._save = save
        self._extra_save: list[str] = []  # labels saved on request by "rerun"
        self._initial: WorldState | None = None
        self._wire: tuple[Mapping[str, Any], bytes] | None = None  # (payload, its bytes)
        if model_log is None:
            if model is None:
                raise ValueError("LensWidget needs a model to trace (or use LensWidget.from_log)")
            # Re-runs replay this exact state, so they reproduce the pass the user is looking at.
            self._initial = WorldState.capture(model)
            model_log = self._trace(save)
        self._set_log(model_log, sync=False)
        super().__init__(graph=self._payload, **widget_kwargs)
        self.on_msg(self._on_msg)

    @classmethod
    def from_log(cls, log: ModelLog, **widget_kwargs: Any) -> LensWidget:
        """Show an existing log (from `lens_widget.trace`); re-running is then unavailable."""
        return cls(None, model_log=log, **widget_kwargs)

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

    # ---- tracing ----

    def _trace(self, save: SaveSpec) -> ModelLog:
        assert self._model is not None
        try:
            return trace(self._model, self._inputs, self._kwargs, save=save)
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
        self._payload = build_payload(log)
        self._records: Mapping[str, OpRecord] = log.by_label
        rolled = self._payload["rolled"]["nodes"]
        self._ids = {
            "unrolled": {n["id"] for n in self._payload["unrolled"]["nodes"]},
            "rolled": {n["id"] for n in rolled},
        }
        self._to_rolled = {p: n["id"] for n in rolled for p in n["passes"]}
        self._to_unrolled = {n["id"]: n["passes"][0] for n in rolled if n["passes"]}
        self._modules = {m["address"] for m in self._payload["modules"]}
        if sync:
            self.graph = self._payload
            if self.selected and self._convert(self.selected, self.view) is None:
                self.selected = ""

    def rerun(self, node_id: str | None = None) -> None:
        """Trace the model again, also saving `node_id`'s activation (labels are stable).

        `node_id` is an op label, or a rolled-view layer id to save every pass of it.
        """
        if self._model is None:
            raise RuntimeError("this widget was built from a log; there is no model to re-run")
        if node_id is not None:
            label = requests.rerun_target(self._records, {"id": node_id}, self._ids["rolled"])
            if label not in self._extra_save:
                self._extra_save.append(label)
        self.status = "re-running the model…"
        try:
            self._set_log(self._replay())
        finally:
            self.status = ""

    def _replay(self) -> ModelLog:
        """Trace again from the initial RNG state and buffers, then put the present ones back."""
        assert self._model is not None and self._initial is not None
        current = WorldState.capture(self._model)
        self._initial.restore(self._model)
        try:
            return self._trace(save_also(self._save, self._extra_save))
        finally:
            current.restore(self._model)

    # ---- trait validation ----

    def _convert(self, value: str, view: str) -> str | None:
        """`value` as an id of `view`: ids of the other view map to their layer / first pass."""
        if value in self._ids[view]:
            return value
        mapped = (self._to_rolled if view == "rolled" else self._to_unrolled).get(value)
        return mapped if mapped in self._ids[view] else None

    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> str:
        value = proposal["value"]
        if value == "":
            return value
        converted = self._convert(value, self.view)
        if converted is None:
            example = next(iter(self._ids[self.view]), "")
            raise traitlets.TraitError(
                f"selected: unknown node id {quote(value)} in the {self.view} view "
                f"(ids look like {example!r}; see w.graph[{self.view!r}]['nodes'])"
            )
        return converted

    @traitlets.validate("expanded")
    def _validate_expanded(self, proposal: dict[str, Any]) -> list[str]:
        unknown = [a for a in proposal["value"] if a not in self._modules]
        if unknown:
            shown = cut(", ".join(quote(a) for a in unknown[:5]))
            raise traitlets.TraitError(f"expanded: unknown module addresses {shown}")
        return list(dict.fromkeys(proposal["value"]))  # drop repeats, keep order

    @traitlets.observe("view")
    def _on_view(self, change: dict[str, Any]) -> None:
        # Keep the selection on the same op when switching views.
        if self.selected:
            self.selected = self._convert(self.selected, change["new"]) or ""

    # ---- requests from the frontend ----

    def _activation(self, params: object) -> requests.Answer:
        return requests.activation(self._records, params)

    def _rerun(self, params: object) -> requests.Answer:
        label = requests.rerun_target(self._records, params, self._ids["rolled"])
        if self._model is None:
            raise requests.RequestError("this widget was built from a log; it cannot re-run")
        self.rerun(label)
        return {"ok": True}, []

    def _on_msg(self, _widget: object, content: object, _buffers: list[object]) -> None:
        handlers: dict[str, requests.Handler] = {
            "activation": self._activation,
            "rerun": self._rerun,
        }
        reply = requests.handle(content, handlers)
        if reply is not None:
            self.send(reply[0], reply[1])
