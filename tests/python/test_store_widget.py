"""A loaded log in the widget: the same graph, and click-to-plot requests answered from disk."""

from __future__ import annotations

import numpy as np
import pytest
from widget_replies import Replies

import lens_widget as lw
from lens_widget import LensWidget
from lens_widget.widget.payload import NO_MODEL, build_payload
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    case = BUILDERS["small_cnn"]()
    log = lw.trace(case.model, case.args, case.kwargs)
    path = tmp_path_factory.mktemp("widget") / "cnn"
    log.save(path)
    return log, lw.load(path)


def test_loaded_log_draws_the_same_graph(logs):
    log, loaded = logs
    widget = LensWidget.from_log(loaded)
    assert widget.graph == {**build_payload(log), "noRerun": NO_MODEL}  # no model to re-run
    assert widget.graph["unrolled"]["nodes"]


def test_click_to_plot_answers_from_the_loaded_log(logs):
    log, loaded = logs
    widget = LensWidget.from_log(loaded)
    replies = Replies(widget)
    conv = next(n for n in log.ops if n.func == "conv2d")
    reply, buffers = replies.ask("activation", {"id": conv.label, "batch": 1}, req_id=5)
    assert reply["ok"] is True and reply["id"] == 5
    expected, expected_buffers = Replies(LensWidget.from_log(log)).ask(
        "activation", {"id": conv.label, "batch": 1}, req_id=5
    )
    assert reply == expected
    assert [bytes(b) for b in buffers] == [bytes(b) for b in expected_buffers]
    assert np.frombuffer(buffers[0], np.uint8).size > 0
    rerun, _ = replies.ask("rerun", {"id": conv.label}, req_id=6)
    assert rerun["ok"] is False and "built from a log" in rerun["error"]
