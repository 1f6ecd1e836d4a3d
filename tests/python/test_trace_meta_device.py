"""A model traced on the meta device (its structure without memory or compute): shapes and
the graph are recorded, no value is kept, and everything that reads values says why."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.records import META_NO_VALUES
from lens_widget.widget.requests import RequestError


def _meta_log() -> lw.ModelLog:
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
    return lw.trace(model, torch.randn(2, 8, device="meta"))


def test_meta_trace_keeps_shapes_and_no_values():
    log = _meta_log()
    assert [op.func for op in log.ops] == ["linear", "gelu", "layer_norm", "linear"]
    assert log.ops[-1].shape == (2, 4) and log.ops[-1].device == "meta"
    assert all(not node.saved for node in log.nodes)
    assert all(op.stats is None for op in log.ops)
    assert log.ops[0].flops == 2 * 2 * 8 * 16  # FLOPs need shapes only
    report = log.validate()
    assert report.checked == 0
    assert set(report.skipped.values()) == {META_NO_VALUES}
    assert "linear_1_1" in str(log)


def test_the_widget_says_a_meta_op_has_no_values(tmp_path):
    widget = lw.LensWidget.from_log(_meta_log())
    with pytest.raises(RequestError, match="meta device"):
        widget._activation({"id": "linear_1_1"})
    with pytest.raises(RequestError, match="mean: it ran on the meta device"):
        widget._metrics({"metric": "mean"})  # why, rather than a graph of grey nodes
    assert widget._metrics({"metric": "flops"})[0]["ids"]  # shapes are enough for FLOPs
    with pytest.raises(RequestError, match="ran on the meta device"):
        widget._first_nonfinite({})
    widget.save_html(tmp_path / "meta.html")
    assert (tmp_path / "meta.html").stat().st_size > 0


def test_saving_a_meta_log_is_a_clear_error(tmp_path):
    with pytest.raises(TypeError, match="meta tensor has no values"):
        _meta_log().save(tmp_path / "meta")
