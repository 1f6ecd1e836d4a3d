"""trace(..., timing=True): every op's time_ms, module totals and the summary."""

from __future__ import annotations

import pytest
import torch
from cleanup_checks import assert_tensors_equal
from test_widget_overlays import values_of
from torch import nn
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()))


def test_every_op_gets_a_positive_time_only_when_timed():
    model, x = small_model(), torch.randn(4, 6)
    plain = lw.trace(model, x)
    timed = lw.trace(model, x, timing=True)
    assert timed.labels == plain.labels
    assert all(op.time_ms is None for op in plain.ops)
    assert all(op.time_ms is not None and op.time_ms > 0 for op in timed.ops)
    assert all(node.time_ms is None for node in timed.nodes if node.kind != "op")
    assert torch.equal(timed.output, plain.output)


def test_module_totals_sum_the_op_times_and_the_summary_shows_them():
    model, x = small_model(), torch.randn(4, 6)
    timed = lw.trace(model, x, timing=True)
    totals = timed.module_totals
    assert totals[""].time_ms == pytest.approx(sum(op.time_ms for op in timed.ops))
    inner = [op.time_ms for op in timed.ops if op.module_stack and op.module_stack[0][0] == "2"]
    assert len(inner) == 2 and totals["2"].time_ms == pytest.approx(sum(inner))
    text = str(timed)
    assert f"op time: {totals[''].time_ms:.2f} ms over {len(timed.ops)} timed ops" in text
    assert f"{totals['2'].time_ms:.2f} ms" in text


def test_a_timed_gpt2_trace_matches_a_plain_one():
    case = BUILDERS["gpt2"]()
    plain = lw.trace(case.model, case.args, case.kwargs)
    timed = lw.trace(case.model, case.args, case.kwargs, timing=True)
    assert timed.labels == plain.labels
    assert all(op.time_ms is not None and op.time_ms > 0 for op in timed.ops)
    assert_tensors_equal(timed.output, plain.output)
    for a, b in zip(plain.ops, timed.ops, strict=True):
        assert (a.label, a.shape, a.parents) == (b.label, b.shape, b.parents)
        if a.activation is not None:
            assert torch.equal(a.activation, b.activation), a.label
    assert timed.validate().checked == plain.validate().checked


def test_timing_and_interventions_together():
    model, x = small_model(), torch.randn(4, 6)
    log = lw.trace(model, x, timing=True, intervene={"1": torch.neg})
    assert all(op.time_ms is not None and op.time_ms > 0 for op in log.ops)
    assert [op.module for op in log.ops if op.intervened] == ["1"]


def test_time_ms_survives_save_and_load(tmp_path):
    timed = lw.trace(small_model(), torch.randn(4, 6), timing=True)
    loaded = lw.load(timed.save(tmp_path / "timed"))
    assert [op.time_ms for op in loaded.ops] == [op.time_ms for op in timed.ops]


def test_a_timed_widget_overlays_the_op_times():
    w = LensWidget(small_model(), torch.randn(4, 6), timing=True)
    reply, buffers = ask(w, "metrics", {"metric": "time"})
    times = values_of(reply, buffers)
    log = w.model_log
    assert list(times) == [op.label for op in log.ops]
    for value, op in zip(times.values(), log.ops, strict=True):
        assert value == pytest.approx(op.time_ms, rel=1e-6)
