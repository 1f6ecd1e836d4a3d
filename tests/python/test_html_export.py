"""The standalone HTML page: what it holds (bundle, traits, activation views), its size budget."""

import base64
import json
import re

import numpy as np
import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.widget import LensWidget, wire
from lens_widget.widget.html_export import BUNDLE, page_blocks
from lens_widget.widget.metric_values import metric_values
from lens_widget.widget.page_views import MIN_VALUES, _pooled_shape
from lens_widget.widget.tensor_view import tensor_view
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built")


@pytest.fixture(scope="module")
def cnn_widget():
    case = TEST_MODELS["small_cnn"]()
    return LensWidget(case.model, case.args, case.kwargs)


@pytest.fixture(scope="module")
def gpt2_log():
    case = TEST_MODELS["gpt2"]()
    return lw.trace(case.model, case.args, case.kwargs)


def read(path):
    text = path.read_text(encoding="utf-8")
    blocks = page_blocks(text)
    views = json.loads(blocks["views"])
    values = np.frombuffer(blocks["values"], dtype="<f4")
    return text, blocks, views, values


def saved_outputs(log):
    return [
        (r.label, i, t)
        for r in log.nodes
        if r.activations is not None
        for i, t in enumerate(r.activations)
        if isinstance(t, torch.Tensor)
    ]


def page_graph(state: dict) -> object:
    """The graph of a page's saved traits: wire.py's bytes in a binary buffer (as it travels)."""
    (data,) = [data for path, data in state["buffers"] if path == ["graph"]]
    return wire.decode(base64.b64decode(data))


def test_page_holds_the_bundle_the_traits_and_every_view(cnn_widget, tmp_path):
    path = cnn_widget.save_html(tmp_path / "cnn.html", weights=True)
    text, blocks, views, values = read(path)
    assert blocks["bundle"] == BUNDLE.read_bytes()
    state = json.loads(blocks["state"])
    assert [path for path, _ in state["buffers"]] == [["graph"]]
    assert page_graph(state) == json.loads(json.dumps(cnn_widget.graph))
    assert state["state"]["status"] == ""

    # every saved output has the view the inspector asks for first, exactly tensor_view's
    outputs = saved_outputs(cnn_widget.model_log)
    assert views["total"] == len(outputs) == len(views["views"]) and views["cap"] is None
    assert views["noWeights"] == []
    by_key = {(v["result"]["id"], v["result"]["output"]): v for v in views["views"]}
    for label, index, tensor in outputs:
        view = by_key[(label, index)]
        result, data = tensor_view(tensor, node_id=label, output=index, n_outputs=1)
        assert view["result"]["dataShape"] == result["dataShape"]
        assert view["result"]["plot"] == result["plot"]
        assert view["result"]["stats"]["numel"] == result["stats"]["numel"]
        got = values[view["offset"] : view["offset"] + view["length"]]
        assert got.tobytes() == data
    # views of equal values (a reshape, dropout in eval mode) share one copy of them
    spans = {(v["offset"], v["length"]) for v in views["views"]}
    answers = views["answers"]  # one value per op for each metric the log gives, after them
    n_metrics = sum(isinstance(where, int) for where in answers["metrics"].values())
    assert len(values) == sum(length for _, length in spans) + n_metrics * len(answers["ids"])
    assert len(spans) < len(outputs)

    # nothing outside the data blocks points anywhere: no src, no href, no URL
    outside = re.sub(r'<script type="application/octet-stream"[^>]*>[^<]*</script>', "", text)
    assert not re.search(r"\b(src|href)=|https?:", outside)
    assert "SmallCNN" in outside and f"{len(outputs)} of {len(outputs)} activations" in outside


def test_weights_are_left_out_unless_asked_for(cnn_widget, tmp_path):
    log = cnn_widget.model_log
    text, _, views, _ = read(log.to_html(tmp_path / "no_weights.html"))
    weights = sorted(r.label for r in log.nodes if r.kind in ("param", "buffer") and r.saved)
    assert weights and views["noWeights"] == weights
    kept = {v["result"]["id"] for v in views["views"]}
    assert not kept & set(weights)
    assert kept == {r.label for r in log.nodes if r.saved and r.kind not in ("param", "buffer")}
    assert views["total"] == len(kept) + len(weights)
    assert f"{len(weights)} parameters and buffers are not (weights=False)" in text


def test_page_opens_in_the_view_the_widget_shows(cnn_widget, tmp_path):
    w = LensWidget.from_log(cnn_widget.model_log)
    w.view = "rolled"
    w.expanded = [m["address"] for m in w.graph["modules"] if m["address"]][:1]
    w.selected = next(n["id"] for n in w.graph["rolled"]["nodes"] if n["kind"] == "op")
    w.height = 900
    state = json.loads(page_blocks(w.save_html(tmp_path / "w.html").read_text())["state"])["state"]
    assert (state["view"], state["selected"], state["expanded"]) == (
        "rolled",
        w.selected,
        w.expanded,
    )
    assert state["height"] == 900


def test_log_to_html_is_the_page_of_a_fresh_widget(gpt2_log, tmp_path):
    path = gpt2_log.to_html(tmp_path / "log.html")
    saved = json.loads(page_blocks(path.read_text())["state"])
    state = saved["state"]
    fresh = LensWidget.from_log(gpt2_log)
    assert page_graph(saved) == json.loads(json.dumps(fresh.graph))
    assert (state["view"], state["selected"], state["expanded"]) == ("unrolled", "", [])


def test_page_views_name_their_dims_as_the_notebook_does(gpt2_log, tmp_path):
    """Axes read "batch, token, feature" in the page too, not "dim 0, dim 1, dim 2"."""
    _, _, views, _ = read(gpt2_log.to_html(tmp_path / "dims.html"))
    widget = LensWidget.from_log(gpt2_log)
    for view in views["views"]:
        result = view["result"]
        notebook = widget._activation({"id": result["id"], "output": result["output"]})[0]
        assert result["dims"] == notebook["dims"], result["id"]
    dims = {v["result"]["id"]: v["result"]["dims"] for v in views["views"]}
    tokens = next(op.label for op in gpt2_log.ops if op.func == "embedding")  # wte's
    assert dims[tokens] == ["batch", "token", "feature"]


def test_page_answers_every_metric_the_kernel_would(gpt2_log, tmp_path):
    """Values are the kernel's own (full precision, not from pooled views); a metric the log
    cannot give carries the kernel's error text."""
    _, _, views, values = read(gpt2_log.to_html(tmp_path / "answers.html"))
    answers = views["answers"]
    assert answers["ids"] == [op.label for op in gpt2_log.ops]
    assert answers["firstNonfinite"] == {"id": None}
    n = len(answers["ids"])
    for metric in ("flops", "bytes", "params", "mean", "absmax"):
        offset = answers["metrics"][metric]
        _, data = metric_values(gpt2_log, metric)
        expected = np.frombuffer(data, dtype="<f4")
        np.testing.assert_array_equal(values[offset : offset + n], expected)
    assert "timing=True" in answers["metrics"]["time"]
    assert "comparison" in answers["metrics"]["relL2"]


def test_a_widget_without_a_model_tells_the_frontend_it_cannot_re_run(gpt2_log):
    assert "noRerun" in LensWidget.from_log(gpt2_log)._payload
    model = nn.Sequential(nn.Linear(2, 2))
    assert "noRerun" not in LensWidget(model, (torch.randn(1, 2),))._payload


def base_size(log, tmp_path) -> int:
    """The page's size without activations, from the error a too-small budget raises."""
    with pytest.raises(ValueError, match=r"max_bytes=1 is below the size of the page") as err:
        log.to_html(tmp_path / "tiny.html", max_bytes=1)
    assert not (tmp_path / "tiny.html").exists()
    return int(re.search(r"\(([\d,]+) bytes", str(err.value)).group(1).replace(",", ""))


def test_a_tight_budget_pools_every_view_to_one_cap_and_fills_the_page(gpt2_log, tmp_path):
    full_path = gpt2_log.to_html(tmp_path / "full.html", weights=True)
    full = read(full_path)[2]
    assert full["cap"] is None and len(full["views"]) == full["total"]
    base = base_size(gpt2_log, tmp_path)
    budget = base + (full_path.stat().st_size - base) * 6 // 10
    path = gpt2_log.to_html(tmp_path / "pooled.html", max_bytes=budget, weights=True)
    text, _, views, values = read(path)
    assert 0.9 * budget <= path.stat().st_size <= budget  # the budget is used, not exceeded
    assert len(views["views"]) == views["total"]  # every op keeps a (smaller) plot
    cap = views["cap"]
    assert MIN_VALUES <= cap < max(v["length"] for v in full["views"])
    pooled = [v for v in views["views"] if "pooled to fit this page" in v["result"]["note"]]
    assert pooled and all(v["length"] <= cap and v["result"]["reduced"] for v in pooled)
    for v in views["views"]:
        assert v["length"] == int(np.prod(v["result"]["dataShape"]))
    assert f"large ones pooled to at most {cap:,} values" in text
    assert np.isfinite(values[: max(v["offset"] + v["length"] for v in views["views"])]).all()


def test_a_budget_too_small_for_all_leaves_out_constants_first_and_says_so(gpt2_log, tmp_path):
    budget = base_size(gpt2_log, tmp_path) + 60_000
    path = gpt2_log.to_html(tmp_path / "small.html", max_bytes=budget)
    text, _, views, _ = read(path)
    assert path.stat().st_size <= budget
    kept = {v["result"]["id"] for v in views["views"]}
    assert 0 < len(kept) < views["total"] - len(views["noWeights"])
    kinds = {r.label: r.kind for r in gpt2_log.nodes}
    left = {
        r.kind
        for r in gpt2_log.nodes
        if r.saved and r.label not in kept and r.label not in views["noWeights"]
    }
    # constants go before any op does
    assert "const" not in {kinds[k] for k in kept} or "op" not in left
    left_out = views["total"] - len(views["views"]) - len(views["noWeights"])
    assert f"{len(views['views'])} of {views['total']} activations are in this page" in text
    assert f"{left_out} were left out to keep it under {budget / 1e6:.3g} MB" in text


def test_a_log_without_activations_still_has_its_graph(tmp_path):
    case = TEST_MODELS["small_cnn"]()
    log = lw.trace(case.model, case.args, case.kwargs, save=None)
    text, blocks, views, values = read(log.to_html(tmp_path / "none.html"))
    assert views["views"] == [] and views["total"] == 0
    # only the metrics that need no values: one per op each (flops, bytes, params)
    metrics = views["answers"]["metrics"]
    assert [name for name, where in metrics.items() if isinstance(where, int)] == [
        "flops", "bytes", "params",
    ]  # fmt: skip
    assert len(values) == 3 * len(log.ops) and "save='all'" in metrics["mean"]
    assert page_graph(json.loads(blocks["state"]))["nOps"] == len(log.ops)
    assert "No activations were saved in the trace." in text


@pytest.mark.parametrize(
    ("shape", "plot", "cap", "expected"),
    [
        ([5000], "line", 1000, [1000]),
        ([300], "line", 1000, [300]),
        ([128, 256], "heatmap", 2048, [32, 64]),
        ([1, 4096], "sequence", 1024, [1, 1024]),
        ([16, 64, 64], "images", 4096, [16, 16, 16]),
        ([1], "scalar", 256, [1]),
    ],
)
def test_pooled_shapes_keep_under_the_cap_and_keep_channels(shape, plot, cap, expected):
    assert _pooled_shape(shape, plot, cap) == expected
    assert np.prod(expected) <= max(cap, np.prod(shape) if plot == "scalar" else cap)
