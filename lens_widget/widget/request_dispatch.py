"""How a LensWidget answers the frontend's requests: one message in, the handler of its
kind found by name, one reply out, a request that runs the model queued behind a running
cell (cell_gate.py); and the handlers that only read what the widget holds.

A mixin of LensWidget. The handlers that re-run the model are model_reruns.py's, the
monitor's monitor_view.py's, the rank view's rank_view.py's; the work and the checks of
`params` are requests.py's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import torch

from lens_widget.compare.comparison import LogComparison, OpDiff
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord
from lens_widget.widget import protocol, requests
from lens_widget.widget.cell_gate import CellGate
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.metric_values import MetricError, side_outputs

# The method answering each kind of protocol.REQUEST_KINDS ("firstNonfinite" ->
# "_first_nonfinite"), named once rather than on every message.
_HANDLER_NAMES = {kind: requests.handler_name(kind) for kind in protocol.REQUEST_KINDS}


def answer_message(widget: RequestDispatch, content: object, buffers: list[object]) -> None:
    """The widget's message callback: a plain function, not a bound method (see LensWidget)."""
    widget._on_msg(widget, content, buffers)


class RequestDispatch:
    """What LensWidget adds to answer requests: `_on_msg` and the read-only handlers."""

    # LensWidget's, set in its constructor and by _set_log
    _model: torch.nn.Module | None
    _model_log: ModelLog
    _records: Mapping[str, OpRecord]
    _dim_names: DimNames
    _comparison: LogComparison | None
    _diffs: dict[str, OpDiff] | None
    _requests_lock: threading.RLock
    _gate: CellGate
    _kept_activation: Any  # MonitorView's: an activation of a monitor's kept step
    send: Any  # ipywidgets': a message to the frontend

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
