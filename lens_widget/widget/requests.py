"""Validate and answer the frontend's request messages (protocol.ts `Request`).

A request is plain JSON `{type: "request", id, method, params}`; every field is checked
before use and every failure becomes an `{ok: false, error}` reply, so a malformed or
hostile message can neither crash the kernel nor reach anything but the lookups below.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch

from lens_widget.log.records import OpRecord
from lens_widget.widget.tensor_view import check_index, tensor_view

Reply = tuple[dict[str, Any], list[bytes]]
Handler = Callable[[dict[str, Any]], Reply]


class RequestError(ValueError):
    """A request the kernel refuses; its message is shown to the user."""


def _params(params: Any, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise RequestError(f"params must be an object, got {type(params).__name__}")
    unknown = set(params) - allowed
    if unknown:
        raise RequestError(f"unknown params: {', '.join(sorted(map(str, unknown)))}")
    missing = required - set(params)
    if missing:
        raise RequestError(f"missing params: {', '.join(sorted(missing))}")
    return params


def node_record(records: Mapping[str, OpRecord], node_id: Any) -> OpRecord:
    """The record of an unrolled node id, or RequestError."""
    if not isinstance(node_id, str):
        raise RequestError(f"id must be a string, got {type(node_id).__name__}")
    record = records.get(node_id)
    if record is None:
        raise RequestError(f"unknown node id {node_id[:200]!r}")
    return record


def activation(records: Mapping[str, OpRecord], params: Any) -> Reply:
    """Answer an "activation" request: the plotted view of one output of one node."""
    p = _params(params, {"id", "output", "batch", "channelStart"}, {"id"})
    record = node_record(records, p["id"])
    if record.activations is None:
        raise RequestError(f"activation of {record.label} was not saved; re-run to save it")
    outputs = record.activations
    try:
        index = check_index("output", p.get("output", 0), len(outputs))
        batch = p.get("batch", 0)
        channel_start = p.get("channelStart", 0)
        for name, value in (("batch", batch), ("channelStart", channel_start)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an integer, got {value!r}")
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
        )
    except RequestError:
        raise
    except ValueError as e:  # index checks from tensor_view
        raise RequestError(str(e)) from e
    return result, [data]


def rerun_target(records: Mapping[str, OpRecord], params: Any, layers: Collection[str] = ()) -> str:
    """The validated id of a "rerun" request: an op label, or a rolled layer (all passes)."""
    p = _params(params, {"id"}, {"id"})
    node_id = p["id"]
    if isinstance(node_id, str) and node_id in layers:
        return node_id
    return node_record(records, node_id).label


def handle(content: Any, handlers: Mapping[str, Handler]) -> Reply | None:
    """The reply to one custom message, or None when it is not a request at all."""
    if not isinstance(content, dict) or content.get("type") != "request":
        return None
    req_id = content.get("id")
    if isinstance(req_id, bool) or not isinstance(req_id, int):
        req_id = None  # still answer, so a buggy frontend sees why

    def error(message: str) -> Reply:
        return {"type": "response", "id": req_id, "ok": False, "error": message}, []

    if req_id is None:
        return error("request id must be an integer")
    method = content.get("method")
    handler = handlers.get(method) if isinstance(method, str) else None
    if handler is None:
        return error(f"unknown method {str(method)[:100]!r}")
    try:
        result, buffers = handler(content.get("params", {}))
    except RequestError as e:
        return error(str(e))
    except Exception as e:  # a bug or a failing re-run must not kill the comm
        return error(f"{type(e).__name__}: {e}")
    return {"type": "response", "id": req_id, "ok": True, "result": result}, buffers
