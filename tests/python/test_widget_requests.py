"""requests: every malformed frontend message becomes an error reply, never an exception."""

import numpy as np
import pytest
import torch

from lens_widget.log.records import OpRecord
from lens_widget.widget import requests


def record(label, *outputs, saved=True):
    first = outputs[0] if outputs else None
    return OpRecord(
        label=label,
        kind="op",
        func="relu",
        index=0,
        layer=label.split(":")[0],
        shape=tuple(first.shape) if first is not None else None,
        activations=tuple(outputs) if saved else None,
    )


RECORDS = {
    "relu_1_1": record("relu_1_1", torch.arange(6.0).reshape(2, 3)),
    "conv2d_1_2": record("conv2d_1_2", torch.randn(2, 4, 5, 5)),
    "split_1_3": record("split_1_3", torch.ones(3), torch.zeros(2)),
    "lazy_1_4": record("lazy_1_4", torch.ones(3), saved=False),
}
HANDLERS = {"activation": lambda p: requests.activation(RECORDS, p)}


def ask(method="activation", params=None, req_id=7, **extra):
    msg = {"type": "request", "id": req_id, "method": method, "params": params, **extra}
    return requests.handle(msg, HANDLERS)


def test_activation_ok_reply_with_buffer():
    reply, buffers = ask(params={"id": "relu_1_1"})
    assert reply["type"] == "response" and reply["id"] == 7 and reply["ok"] is True
    assert reply["result"]["id"] == "relu_1_1"
    assert reply["result"]["plot"] == "heatmap"
    np.testing.assert_array_equal(
        np.frombuffer(buffers[0], "<f4").reshape(2, 3), RECORDS["relu_1_1"].activation.numpy()
    )


def test_second_output_of_multi_output_op():
    reply, buffers = ask(params={"id": "split_1_3", "output": 1})
    assert reply["ok"] and reply["result"]["output"] == 1 and reply["result"]["nOutputs"] == 2
    assert np.frombuffer(buffers[0], "<f4").tolist() == [0.0, 0.0]


def test_image_window_params_are_passed():
    reply, _ = ask(params={"id": "conv2d_1_2", "batch": 1, "channelStart": 2})
    assert reply["ok"]
    assert reply["result"]["batch"]["index"] == 1
    assert reply["result"]["channels"] == {"start": 2, "count": 2, "total": 4}


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("nope", {"id": "relu_1_1"}, "unknown method"),
        (None, {"id": "relu_1_1"}, "method must be a string, got None"),
        (["activation"], {"id": "relu_1_1"}, "method must be a string, got ['activation']"),
        ("activation", {"id": "missing_9_9"}, "unknown node id"),
        ("activation", {"id": 3}, "id must be a string"),
        ("activation", {}, "missing params: id"),
        ("activation", None, "params must be an object"),
        ("activation", "relu_1_1", "params must be an object"),
        ("activation", {"id": "relu_1_1", "evil": "__import__('os')"}, "unknown params: evil"),
        ("activation", {"id": "conv2d_1_2", "batch": 2}, "batch 2 out of range"),
        ("activation", {"id": "conv2d_1_2", "batch": -1}, "out of range"),
        ("activation", {"id": "conv2d_1_2", "batch": 0.5}, "batch must be an integer"),
        ("activation", {"id": "conv2d_1_2", "batch": True}, "batch must be an integer"),
        ("activation", {"id": "conv2d_1_2", "batch": "0"}, "batch must be an integer"),
        ("activation", {"id": "conv2d_1_2", "channelStart": 4}, "channelStart 4 out of range"),
        ("activation", {"id": "conv2d_1_2", "channelStart": None}, "must be an integer"),
        ("activation", {"id": "split_1_3", "output": 2}, "output 2 out of range"),
        ("activation", {"id": "split_1_3", "output": "1"}, "output must be an integer"),
        ("activation", {"id": "lazy_1_4"}, "was not saved"),
    ],
)
def test_bad_requests_get_error_replies(method, params, message):
    reply, buffers = ask(method=method, params=params)
    assert reply["ok"] is False and reply["id"] == 7 and reply["type"] == "response"
    assert message in reply["error"]
    assert buffers == []


@pytest.mark.parametrize("req_id", [None, "7", 1.5, True])
def test_bad_request_id(req_id):
    reply, _ = ask(params={"id": "relu_1_1"}, req_id=req_id)
    assert reply["ok"] is False and reply["id"] is None
    assert "id must be an integer" in reply["error"]


@pytest.mark.parametrize("content", [None, "request", 5, [], {"type": "other"}, {}])
def test_non_requests_are_ignored(content):
    assert requests.handle(content, HANDLERS) is None


def test_handler_crash_becomes_error_reply():
    def boom(_params):
        raise RuntimeError("model exploded")

    reply, _ = requests.handle(
        {"type": "request", "id": 1, "method": "x", "params": {}}, {"x": boom}
    )
    assert reply == {
        "type": "response",
        "id": 1,
        "ok": False,
        "error": "RuntimeError: model exploded",
    }


def test_rerun_target_validation():
    assert requests.rerun_target(RECORDS, {"id": "lazy_1_4"}) == "lazy_1_4"
    with pytest.raises(requests.RequestError, match="unknown node id"):
        requests.rerun_target(RECORDS, {"id": "zzz"})
    with pytest.raises(requests.RequestError, match="unknown params"):
        requests.rerun_target(RECORDS, {"id": "lazy_1_4", "batch": 0})


def test_rerun_target_accepts_rolled_layers():
    assert requests.rerun_target(RECORDS, {"id": "relu_1"}, {"relu_1"}) == "relu_1"
    with pytest.raises(requests.RequestError, match="unknown node id"):
        requests.rerun_target(RECORDS, {"id": "relu_1"}, {"other"})


HUGE = "k" * 1_000_000


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("activation", {"id": HUGE}),
        ("activation", {"id": "relu_1_1", HUGE: 1}),
        ("activation", {"id": "relu_1_1", **{f"{HUGE}{i}": 1 for i in range(20)}}),
        ("activation", {"id": "conv2d_1_2", "batch": HUGE}),
        ("activation", {"id": "conv2d_1_2", "channelStart": [HUGE]}),
        ("activation", {"id": "split_1_3", "output": 10**5000}),
        (HUGE, {"id": "relu_1_1"}),
    ],
)
def test_error_replies_quote_bad_input_briefly(method, params):
    reply, _ = ask(method=method, params=params)
    assert reply["ok"] is False
    assert len(reply["error"]) <= 300, reply["error"][:400]


def test_a_long_handler_error_is_cut():
    def verbose(_params):
        raise RuntimeError("x" * 100_000)

    reply, _ = requests.handle(
        {"type": "request", "id": 1, "method": "v", "params": {}}, {"v": verbose}
    )
    assert reply["error"].startswith("RuntimeError: xxx") and reply["error"].endswith("…")
    assert len(reply["error"]) <= 2000


def test_an_interrupted_request_is_answered():
    """Kernel -> Interrupt during a re-run raises KeyboardInterrupt in the handler: the
    frontend gets "interrupted" at once instead of waiting out its timeout."""

    def slow(params: object) -> requests.Answer:
        raise KeyboardInterrupt

    reply, buffers = requests.handle(
        {"type": "request", "id": 4, "method": "rerun", "params": {}}, {"rerun": slow}
    )
    assert reply == {"type": "response", "id": 4, "ok": False, "error": "interrupted"}
    assert buffers == []
