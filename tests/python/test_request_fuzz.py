"""Request fuzz: a widget message may carry any JSON value in any field (a buggy or hostile
frontend). Each one gets exactly one clear reply, or none where it is no request, and the
widget never raises; the envelope's field types are checked once, before any lookup."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from lens_widget.widget import protocol, requests
from lens_widget.widget.lens_widget import LensWidget

# One value of every JSON type (and the Python values a comm could still hand over).
VALUES: list[object] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    1.5,
    math.nan,
    "",
    "x",
    [],
    ["rerun"],
    [["activation"]],
    {},
    {"id": "linear_1_1"},
    {"method": "rerun"},
]
# The method names the widget answers, two of which run the model (queued behind a cell).
METHODS: list[object] = [*protocol.REQUEST_KINDS, "nope", *VALUES]


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    return LensWidget(model, torch.randn(2, 4), save=["linear"])


def _replies(widget: LensWidget, content: object) -> list[dict]:
    sent: list[dict] = []
    widget.send = lambda msg, buffers=None: sent.append(msg)
    try:
        widget._on_msg(widget, content, [])
    finally:
        del widget.send
    return sent


def _assert_one_error(sent: list[dict], req_id: object, words: str) -> None:
    assert len(sent) == 1, sent
    (reply,) = sent
    assert reply["type"] == "response" and reply["ok"] is False, reply
    assert reply["id"] == req_id
    assert words in reply["error"], reply["error"]
    assert len(reply["error"]) <= 300


@pytest.mark.parametrize("method", [v for v in VALUES if not isinstance(v, str)], ids=repr)
def test_a_method_of_any_other_type_gets_the_error_reply(widget, method):
    """`method: ["rerun"]` raised TypeError: unhashable type: 'list' out of runs_model."""
    content = {"type": "request", "id": 5, "method": method, "params": {}}
    _assert_one_error(_replies(widget, content), 5, "method must be a string")
    reply = requests.handle(content, {})
    assert reply is not None and "method must be a string" in reply[0]["error"]
    assert requests.runs_model(content) is None


@pytest.mark.parametrize("req_id", [v for v in VALUES if type(v) is not int], ids=repr)
@pytest.mark.parametrize("method", ["rerun", "activation", ["rerun"], None])
def test_an_id_of_any_other_type_gets_the_error_reply(widget, req_id, method):
    content = {"type": "request", "id": req_id, "method": method, "params": {}}
    _assert_one_error(_replies(widget, content), None, "request id must be an integer")


def test_every_field_of_every_type_is_answered_and_never_raises(widget):
    """Every (id, method, params) combination over one value of each type: one reply with the
    request's own id (or None where the id is no integer), never an exception."""
    ids = [7, *VALUES]
    for req_id, method, params in itertools.product(ids, METHODS, VALUES):
        content = {"type": "request", "id": req_id, "method": method, "params": params}
        sent = _replies(widget, content)
        assert len(sent) == 1, content
        (reply,) = sent
        good_id = type(req_id) is int
        assert reply["type"] == "response" and reply["id"] == (req_id if good_id else None)
        if not (good_id and isinstance(method, str) and method in protocol.REQUEST_KINDS):
            assert reply["ok"] is False and reply["error"], content


@pytest.mark.parametrize("kind", VALUES, ids=repr)
def test_a_message_whose_type_is_not_request_is_left_alone(widget, kind):
    content = {"type": kind, "id": 1, "method": ["rerun"], "params": {}}
    assert _replies(widget, content) == []
    assert requests.runs_model(content) is None


@pytest.mark.parametrize("content", VALUES, ids=repr)
def test_a_message_that_is_no_object_is_left_alone(widget, content):
    assert _replies(widget, content) == []
