"""Validate and answer the frontend's request messages (protocol.ts `Request`).

A request is plain JSON `{type: "request", id, method, params}`; every field is checked
before use and every failure becomes an `{ok: false, error}` reply, so a malformed or
hostile message can neither crash the kernel nor reach anything but the lookups below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import torch

from lens_widget.compare.comparison import OpDiff
from lens_widget.log.attention import AttentionUnavailable
from lens_widget.log.model_log import ModelLog
from lens_widget.log.nonfinite import NotSavedError, nonfinite_reach
from lens_widget.log.records import OpRecord
from lens_widget.widget import protocol
from lens_widget.widget.attention_view import attention_view
from lens_widget.widget.call_view import op_details as call_details
from lens_widget.widget.checks import check_index, cut, quote, require_int
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.metric_values import MetricError, metric_values
from lens_widget.widget.module_view import UnknownModule, module_details
from lens_widget.widget.tensor_view import tensor_view

# What a handler answers: the `result` of the response and its binary buffers.
Result = (
    protocol.ActivationResult
    | protocol.AttentionResult
    | protocol.RerunResult
    | protocol.MetricsResult
    | protocol.FirstNonfiniteResult
    | protocol.MonitorStepResult
    | protocol.MonitorSeriesResult
    | protocol.OpDetailsResult
    | protocol.ModuleDetailsResult
)
Answer = tuple[Result, list[bytes]]
Reply = tuple[protocol.ResponseMessage, list[bytes]]
# A handler gets the request's `params` unchecked: it validates them itself.
Handler = Callable[[object], Answer]

# The other sides of a compared op: (A's label, "b" | "diff") -> its outputs on that side.
OtherSide = Callable[[str, str], tuple[torch.Tensor, ...]]
_SIDES = ("a", "b", "diff")
_VALUES = ("activation", "grad")

# Requests that run the model: never while a cell runs (cell_gate.py); the others only read.
RUNS_MODEL = frozenset(k for k, spec in protocol.REQUEST_KINDS.items() if spec.runs_model)
WAITING = "waiting for the running cell"

# The longest error reply (a failing re-run's message can be long, and may quote input).
_MAX_ERROR = 2000


class RequestError(ValueError):
    """A request the kernel refuses; its message is shown to the user."""


def request_params(params: object, allowed: set[str], required: set[str]) -> dict[str, object]:
    if not isinstance(params, dict):
        raise RequestError(f"params must be an object, got {type(params).__name__}")
    unknown = set(params) - allowed
    if unknown:
        names = sorted(cut(str(name)) for name in unknown)
        raise RequestError(f"unknown params: {cut(', '.join(names))}")
    missing = required - set(params)
    if missing:
        raise RequestError(f"missing params: {', '.join(sorted(missing))}")
    return params


def node_record(records: Mapping[str, OpRecord], node_id: object) -> OpRecord:
    """The record of an unrolled node id, or RequestError."""
    if not isinstance(node_id, str):
        raise RequestError(f"id must be a string, got {type(node_id).__name__}")
    record = records.get(node_id)
    if record is None:
        raise RequestError(f"unknown node id {quote(node_id)}")
    return record


def activation(
    records: Mapping[str, OpRecord],
    params: object,
    dim_names: DimNames | None = None,
    other_side: OtherSide | None = None,
) -> Answer:
    """Answer an "activation" request: the plotted view of one output of one node; in a
    comparison (`other_side` given) of A's value, B's or A−B (`side`); with `value` "grad"
    the gradient that flowed into its first output (one `backwardPass`, or summed)."""
    allowed = {"id", "output", "batch", "channelStart", "side", "value", "backwardPass"}
    p = request_params(params, allowed, {"id"})
    record = node_record(records, p["id"])
    side = p.get("side", "a")
    if side not in _SIDES:
        raise RequestError(f"side must be one of {', '.join(_SIDES)}, got {quote(side, 20)}")
    value = p.get("value", "activation")
    if value not in _VALUES:
        raise RequestError(f"value must be one of {', '.join(_VALUES)}, got {quote(value, 20)}")
    if value == "grad":
        if side != "a":
            raise RequestError("gradients are shown for A only (side must be 'a')")
        outputs = (gradient_of(record, p.get("backwardPass")),)
    elif "backwardPass" in p:
        raise RequestError("backwardPass goes with value 'grad'")
    elif side != "a":
        if other_side is None:
            raise RequestError(f"side {side!r} needs a comparison (LensWidget.compare)")
        outputs = other_side(record.label, str(side))
    elif record.activations is None:
        if record.no_values is not None:
            raise RequestError(f"{record.label}: {record.no_values}")
        raise RequestError(f"activation of {record.label} was not saved; re-run to save it")
    else:
        outputs = record.activations
    try:
        index = check_index("output", p.get("output", 0), len(outputs))
        batch = require_int("batch", p.get("batch", 0))
        channel_start = require_int("channelStart", p.get("channelStart", 0))
        tensor = outputs[index]
        if not isinstance(tensor, torch.Tensor):
            raise RequestError(f"output {index} of {record.label} is not a tensor")
        result, data = tensor_view(
            tensor,
            node_id=record.label,
            output=index,
            n_outputs=len(outputs),
            batch=batch,
            channel_start=channel_start,
            dim_names=dim_names.of(record.label, index) if dim_names else (),
        )
    except RequestError:
        raise
    except ValueError as e:  # index checks, here and in tensor_view
        raise RequestError(str(e)) from e
    nested = record.nested_shapes
    samples = nested[index] if nested and value == "activation" and side == "a" else None
    if samples is not None:
        result["note"] = "; ".join(filter(None, (padded_note(samples), result["note"])))
    return result, [data]


def padded_note(samples: tuple[tuple[int, ...], ...]) -> str:
    """What the view of a nested output (saved padded: log/nested.py) says of it."""
    shown = ", ".join("x".join(map(str, shape)) for shape in samples[:8])
    more = f" and {len(samples) - 8} more" if len(samples) > 8 else ""
    return f"nested tensor shown padded with zeros (samples {shown}{more})"


def gradient_of(record: OpRecord, backward_pass: object = None) -> torch.Tensor:
    """The gradient that flowed into `record`'s (first) output: of one backward pass
    (1-based `backward_pass`), or summed over all of them when it is None."""
    grads = record.grads
    if grads is None:
        if record.kind in ("input", "const") and not record.requires_grad:
            # a log with gradients too: its inputs (ids, pixel values) usually want none
            raise RequestError(
                f"no gradient: the {record.kind} {record.label} does not require grad"
            )
        raise RequestError("this log kept no gradients (trace a backward to see them)")
    if backward_pass is None:
        grad = record.grad
        where = ""
    else:
        try:
            number = require_int("backwardPass", backward_pass)
        except ValueError as e:
            raise RequestError(str(e)) from e
        if not 1 <= number <= len(grads):
            raise RequestError(
                f"backwardPass {number} out of range: this log has {len(grads)} "
                f"backward pass{'es' if len(grads) != 1 else ''} (numbered from 1)"
            )
        grad = grads[number - 1]
        where = f" in backward pass {number}"
    if grad is None:
        raise RequestError(f"no gradient reached this op{where}")
    return grad


def attention(records: Mapping[str, OpRecord], params: object) -> Answer:
    """Answer an "attention" request: one head's attention map of one batch item."""
    p = request_params(params, {"id", "batch", "head"}, {"id"})
    record = node_record(records, p["id"])
    try:
        result, data = attention_view(
            record,
            batch=require_int("batch", p.get("batch", 0)),
            head=require_int("head", p.get("head", 0)),
        )
    except AttentionUnavailable as e:
        raise RequestError(str(e)) from e
    except ValueError as e:  # batch or head out of range
        raise RequestError(f"{record.label}: {e}") from e
    return result, [data]


def op_details(log: ModelLog, params: object, reach: Mapping[str, bool] | None = None) -> Answer:
    """Answer an "opDetails" request: the op's call, argument by argument, and its numbers
    (`reach`: `nonfinite_reach(log.nodes)` when the caller asks of many ops)."""
    p = request_params(params, {"id"}, {"id"})
    record = node_record(log.by_label, p["id"])
    return call_details(record, lambda: reach or nonfinite_reach(log.nodes)), []


def module_info(log: ModelLog, params: object, model: torch.nn.Module | None) -> Answer:
    """Answer a "moduleDetails" request: the module inspector's facts."""
    p = request_params(params, {"address"}, {"address"})
    try:
        return module_details(log, p["address"], model), []
    except UnknownModule as e:
        raise RequestError(str(e)) from e


def metric_name(params: object) -> str:
    """The validated metric of a "metrics" request (the metric table checks the name)."""
    p = request_params(params, {"metric"}, {"metric"})
    metric = p["metric"]
    if not isinstance(metric, str):
        raise RequestError(f"metric must be a string, got {type(metric).__name__}")
    return metric


def no_params(params: object) -> None:
    """A request that takes no params ("firstNonfinite")."""
    request_params(params, set(), set())


def metrics(log: ModelLog, params: object, diffs: Mapping[str, OpDiff] | None = None) -> Answer:
    """One overlay metric of every op (`diffs`: a comparison's, for its metrics)."""
    metric = metric_name(params)
    try:
        result, data = metric_values(log, metric, diffs)
    except MetricError as e:
        raise RequestError(str(e)) from e
    return result, [data]


def first_nonfinite(log: ModelLog, params: object) -> Answer:
    """The op that produced the first NaN/Inf (its id, or None)."""
    no_params(params)
    try:
        op = log.first_nonfinite()
    except NotSavedError as e:
        raise RequestError(str(e)) from e
    return {"id": op.label if op is not None else None}, []


def rerun_target(
    records: Mapping[str, OpRecord], params: object, layers: Collection[str] = ()
) -> str:
    """The validated id of a "rerun" request: an op label, or a rolled layer (all passes)."""
    p = request_params(params, {"id"}, {"id"})
    node_id = p["id"]
    if isinstance(node_id, str) and node_id in layers:
        return node_id
    return node_record(records, node_id).label


@dataclass(frozen=True, slots=True)
class Envelope:
    """A request's fields whose types are checked: what the lookups may use."""

    id: int
    method: str
    params: object  # each handler checks its own


def read_envelope(content: object) -> Envelope | Reply | None:
    """The checked envelope of a request; an error reply naming the first field of the wrong
    type (any JSON value may arrive in any field); None for a message that is no request.
    Checked once here, so no lookup ever sees an unhashable or foreign value."""
    if not isinstance(content, dict) or content.get("type") != "request":
        return None
    try:
        req_id = require_int("request id", content.get("id"))
    except ValueError:
        # Still answer, so a buggy frontend sees why.
        return _error(None, "request id must be an integer")
    method = content.get("method")
    if not isinstance(method, str):
        return _error(req_id, f"method must be a string, got {quote(method, 100)}")
    return Envelope(req_id, method, content.get("params", {}))


def runs_model(content: object) -> int | None:
    """The id of a well-formed request that runs the model; None for any other message."""
    envelope = read_envelope(content)
    if isinstance(envelope, Envelope) and envelope.method in RUNS_MODEL:
        return envelope.id
    return None


def waiting(req_id: int) -> protocol.WaitingMessage:
    """Said at once of a request queued behind the running cell; its response comes later."""
    return {"type": "waiting", "id": req_id, "reason": WAITING}


def _error(req_id: int | None, message: str) -> Reply:
    return {"type": "response", "id": req_id, "ok": False, "error": cut(message, _MAX_ERROR)}, []


def handle(content: object, handlers: Mapping[str, Handler]) -> Reply | None:
    """The reply to one custom message, or None when it is not a request at all."""
    envelope = read_envelope(content)
    if not isinstance(envelope, Envelope):
        return envelope  # no request, or the error reply to a malformed one
    handler = handlers.get(envelope.method)
    if handler is None:
        return _error(envelope.id, f"unknown method {quote(envelope.method, 100)}")
    try:
        result, buffers = handler(envelope.params)
    except RequestError as e:
        return _error(envelope.id, str(e))
    except Exception as e:  # a bug or a failing re-run must not kill the comm
        return _error(envelope.id, f"{type(e).__name__}: {e}")
    except KeyboardInterrupt:  # the user interrupted the kernel during a re-run: say so,
        return _error(envelope.id, "interrupted")  # or the frontend waits out its timeout
    return {"type": "response", "id": envelope.id, "ok": True, "result": result}, buffers


def handler_name(kind: str) -> str:
    """The widget method that answers a request kind: "firstNonfinite" -> "_first_nonfinite"."""
    return "_" + re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), kind)
