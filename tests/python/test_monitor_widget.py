"""The monitor view (LensWidget.from_monitor, Monitor.widget()): the "monitorStep" and
"monitorSeries" requests answer the history's own numbers, bad params are clear errors, a
live monitor updates the widget step by step, and its listener keeps no widget alive."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest
import traitlets
from widget_replies import ask

import lens_widget as lw
from lens_widget.log.monitor.step_history import STAT_NAMES
from model_zoo.monitored import PoisonNet, train

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

POISON = 3


@pytest.fixture
def trained() -> tuple[lw.Monitor, lw.LensWidget]:
    model = PoisonNet(poison_at=POISON)
    mon = lw.Monitor(model, keep="nonfinite")
    widget = mon.widget()
    train(model, mon, 6)
    return mon, widget


def ok(widget: lw.LensWidget, method: str, params: object) -> tuple[dict, list]:
    msg, buffers = ask(widget, method, params)
    assert msg["ok"], msg.get("error")
    return msg["result"], buffers


def floats(buffer: bytes) -> np.ndarray:
    return np.frombuffer(buffer, dtype="<f4")


def test_a_live_monitor_widget_follows_the_steps():
    model = PoisonNet()
    mon = lw.Monitor(model, every=2)
    widget = mon.widget()
    assert widget.graph["nOps"] == 0 and widget.monitor["steps"] == []  # before the first step
    assert widget.step == -1  # follows the latest
    seen: list[list[int]] = []
    widget.observe(lambda change: seen.append(change["new"]["steps"]), "monitor")
    train(model, mon, 5)
    assert seen == [[0], [0, 2], [0, 2, 4]]  # one update per traced step, as it came
    structure = mon.history.structure
    assert structure is not None and widget.model_log is structure
    assert widget.graph["nOps"] == len(structure.ops) > 0
    assert "monitored training run" in widget.graph["noRerun"]  # why the inspector plots none
    assert widget.monitor["every"] == 2 and widget.monitor["grads"] is True
    widget.step = 2  # the step shown, from Python; -1 follows again
    assert widget.get_state(["step"]) == {"step": 2}
    with pytest.raises(traitlets.TraitError):
        widget.step = -2


@pytest.mark.parametrize("side", ["activation", "gradient"])
@pytest.mark.parametrize("stat", ["mean", "absmax", "zero_fraction", "nan"])
def test_a_step_column_is_the_history_column(trained, side, stat):
    mon, widget = trained
    for stats in mon.history.steps:
        result, [buffer] = ok(
            widget, "monitorStep", {"step": stats.step, "stat": stat, "side": side}
        )
        assert result["ids"] == list(stats.ops.labels)
        expected = stats.side(side)[:, STAT_NAMES.index(stat)].astype(np.float32)
        np.testing.assert_array_equal(floats(buffer), expected)


def test_change_is_relative_to_the_first_step(trained):
    mon, widget = trained
    first, second = mon.history.steps[0], mon.history.steps[1]
    result, [buffer] = ok(widget, "monitorStep", {"step": 1, "stat": "std", "mode": "change"})
    col = STAT_NAMES.index("std")
    now, then = second.activation[:, col], first.activation[:, col]
    expected = np.abs(now - then) / np.where(np.abs(then) > 1e-12, np.abs(then), 1)
    np.testing.assert_allclose(floats(buffer), expected.astype(np.float32), equal_nan=True)
    # ranked: the most changed first, at most `top`, all finite
    result, _ = ok(widget, "monitorStep", {"step": 1, "stat": "std", "mode": "change", "top": 4})
    changes = [r["change"] for r in result["ranked"]]
    assert len(changes) == 4 and changes == sorted(changes, reverse=True)
    assert not any(r["nonfinite"] for r in result["ranked"])
    best = int(np.nanargmax(expected))
    assert result["ranked"][0]["id"] == second.ops.labels[best]


def test_ids_are_sent_once_per_op_index(trained):
    _mon, widget = trained
    first, _ = ok(widget, "monitorStep", {"step": 0, "stat": "mean"})
    assert first["ids"] and first["opsKey"] == 0
    again, _ = ok(widget, "monitorStep", {"step": 2, "stat": "mean", "idsOf": first["opsKey"]})
    assert again["opsKey"] == 0 and again["ids"] is None  # the same graph: numbers only


def test_the_nan_step_ranks_the_op_that_made_it_first(trained):
    mon, widget = trained
    result, [buffer] = ok(widget, "monitorStep", {"step": POISON, "stat": "nan"})
    assert result["firstNonfinite"] == {"id": result["ranked"][0]["id"], "side": "activation"}
    assert result["ranked"][0]["id"].startswith("log_") and result["ranked"][0]["nonfinite"]
    assert mon.history.first_nonfinite() == (POISON, result["ranked"][0]["id"])
    before, _ = ok(widget, "monitorStep", {"step": POISON - 1, "stat": "nan"})
    assert before["firstNonfinite"] is None and not any(r["nonfinite"] for r in before["ranked"])
    assert widget.monitor["nonfinite"][0] == POISON and widget.monitor["kept"] == [POISON]


def test_a_series_is_the_history_series(trained):
    mon, widget = trained
    label = mon.history.steps[0].ops.labels[0]
    result, buffers = ok(widget, "monitorSeries", {"id": label})
    assert result["sides"] == ["activation", "gradient"] and len(buffers) == 2
    assert result["stats"] == list(STAT_NAMES) and result["kept"] == [POISON]
    for side, buffer in zip(result["sides"], buffers, strict=True):
        series = mon.history.series(label, side)
        assert result["steps"] == series["step"]
        rows = floats(buffer).reshape(len(result["steps"]), len(STAT_NAMES))
        for i, name in enumerate(STAT_NAMES):
            np.testing.assert_array_equal(rows[:, i], np.float32(series[name]))


def test_a_kept_step_answers_the_activation_request(trained):
    mon, widget = trained
    label = mon.history.first_nonfinite()[1]
    result, _ = ok(widget, "activation", {"id": label, "step": POISON})
    assert result["id"] == label and result["stats"]["nan"] > 0
    msg, _ = ask(widget, "activation", {"id": label, "step": 1})
    assert not msg["ok"] and "not kept" in msg["error"]


BAD = [
    ("monitorStep", {"step": 0}, "missing params: stat"),
    ("monitorStep", {"step": 99, "stat": "mean"}, "no traced step 99"),
    ("monitorStep", {"step": True, "stat": "mean"}, "step must be an integer"),
    ("monitorStep", {"step": "0", "stat": "mean"}, "step must be an integer"),
    ("monitorStep", {"step": 0, "stat": "median"}, "stat must be one of"),
    ("monitorStep", {"step": 0, "stat": "mean", "side": "weights"}, "side must be one of"),
    ("monitorStep", {"step": 0, "stat": "mean", "mode": "diff"}, "mode must be one of"),
    ("monitorStep", {"step": 0, "stat": "mean", "top": 10**9}, "top must be in"),
    ("monitorStep", {"step": 0, "stat": "mean", "idsOf": []}, "idsOf must be an integer"),
    ("monitorStep", {"step": 0, "stat": "mean", "evil": 1}, "unknown params: evil"),
    ("monitorStep", [], "params must be an object"),
    ("monitorSeries", {"id": 3}, "id must be a string"),
    ("monitorSeries", {"id": "x" * 10_000}, "ran in no traced step"),
    ("activation", {"id": "linear_1_1", "step": "3"}, "step must be an integer"),
]


@pytest.mark.parametrize(("method", "params", "error"), BAD)
def test_bad_params_are_clear_errors(trained, method, params, error):
    _mon, widget = trained
    msg, buffers = ask(widget, method, params)
    assert not msg["ok"] and error in msg["error"] and buffers == []
    assert len(msg["error"]) < 600  # a huge bad value is not echoed back


def test_a_widget_without_a_monitor_refuses_monitor_requests():
    model = PoisonNet()
    widget = lw.LensWidget.from_log(lw.trace(model, (np_input(),)))
    msg, _ = ask(widget, "monitorStep", {"step": 0, "stat": "mean"})
    assert not msg["ok"] and "shows no monitor" in msg["error"]
    msg, _ = ask(widget, "activation", {"id": "linear_1_1", "step": 0})
    assert not msg["ok"] and "from_monitor" in msg["error"]
    assert widget.monitor is None


def np_input():
    import torch

    torch.manual_seed(0)
    return torch.randn(4, 8)


def test_without_gradients_the_gradient_side_is_a_clear_error():
    model = PoisonNet()
    mon = lw.Monitor(model, grads=False)
    train(model, mon, 2)
    widget = lw.LensWidget.from_monitor(mon)
    msg, _ = ask(widget, "monitorStep", {"step": 0, "stat": "mean", "side": "gradient"})
    assert not msg["ok"] and "grads=False" in msg["error"]
    result, buffers = ok(widget, "monitorSeries", {"id": "linear_1_1"})
    assert result["sides"] == ["activation"] and len(buffers) == 1


def test_a_loaded_history_shows_like_the_monitor(trained, tmp_path):
    mon, live = trained
    history = lw.load_monitor(mon.save(tmp_path / "run"))
    widget = lw.LensWidget.from_monitor(history)
    assert widget.monitor == live.monitor
    assert widget.graph["nOps"] == live.graph["nOps"]
    a, [buf_a] = ok(widget, "monitorStep", {"step": 4, "stat": "absmax", "mode": "change"})
    b, [buf_b] = ok(live, "monitorStep", {"step": 4, "stat": "absmax", "mode": "change"})
    assert a == b and floats(buf_a).tobytes() == floats(buf_b).tobytes()
    result, _ = ok(widget, "activation", {"id": history.first_nonfinite()[1], "step": POISON})
    assert result["stats"]["nan"] > 0
    with pytest.raises(TypeError, match="Monitor or a StepHistory"):
        lw.LensWidget.from_monitor(mon.history.structure)  # pyright: ignore[reportArgumentType]


def test_the_listener_holds_the_widget_weakly():
    model = PoisonNet()
    mon = lw.Monitor(model)
    gc.collect()
    gc.disable()
    try:
        widget = mon.widget()
        train(model, mon, 1)
        ref = weakref.ref(widget)
        widget.close()
        del widget
        assert ref() is None, "the monitor's listener kept the closed widget alive"
    finally:
        gc.enable()
    train(model, mon, 2)  # steps after the widget is gone: no error, the history grows
    assert mon.steps == [0, 1, 2]


def test_relative_change_marks_gained_and_lost_values():
    from lens_widget.widget.monitor.monitor_requests import relative_change

    now = np.array([2.0, 0.5, math.nan, 1.0, math.nan])
    then = np.array([1.0, 0.0, 1.0, math.nan, math.nan])
    change = relative_change(now, then)
    assert change[0] == 1.0 and change[1] == 0.5  # relative; absolute from zero
    assert change[2] == math.inf and change[3] == math.inf and math.isnan(change[4])
