"""Plots with named axes (#24 item 8), on real traced models behind the real request handler:
a (batch, token, head, feature) tensor is a token x head·feature heatmap with a tick per
head, SDPA's per-head tiles have ticks and axis titles, a GRU cell's state is (batch,
hidden), and in a comparison every plot says which side it shows, attention included."""

from __future__ import annotations

import pytest
from lens_harness import lens, open_widget, wait_idle, widget_kernel

pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo import gpt2  # noqa: E402
from model_zoo.rnn_cells import gru_cell_lm  # noqa: E402

MAIN = "[data-testid=plot-main]"


def _select(page, label: str) -> None:
    page.fill("[data-testid=search]", label)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == label


def _layout(page, plot_id: str) -> dict:
    page.wait_for_function(
        "([sel, id]) => { const d = document.querySelector(sel);"
        " return d && d.layout && d.dataset && window.__el.__lens.selected === id; }",
        arg=[MAIN, plot_id],
    )
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    return page.evaluate(
        """(sel) => { const l = document.querySelector(sel).layout; const out = {};
          for (const [k, v] of Object.entries(l)) if (/^[xy]axis\\d*$/.test(k)) out[k] = {
            title: v.title && v.title.text, ticktext: v.ticktext || null,
            showticklabels: v.showticklabels !== false, visible: v.visible !== false };
          return out; }""",
        MAIN,
    )


@pytest.fixture(scope="module")
def gpt2_widget() -> LensWidget:
    case = gpt2()
    return LensWidget(case.model, case.args, case.kwargs)


def test_heads_split_from_tokens_and_per_head_tiles_have_named_axes(
    page, gpt2_widget, artifacts
) -> None:
    log = gpt2_widget.model_log
    sdpa = next(op for op in log.ops if op.func == "scaled_dot_product_attention")
    (reshaped,) = sdpa.children
    moved = next(c for c in log[reshaped].children if log[c].func == "transpose")
    open_widget(page, gpt2_widget.graph, python_kernel=widget_kernel(gpt2_widget))
    _select(page, moved)
    axes = _layout(page, moved)
    assert axes["xaxis"]["title"] == "head×feature" and axes["yaxis"]["title"] == "token"
    assert axes["xaxis"]["ticktext"] == ["head 0", "head 1"]
    assert page.inner_text("[data-testid=activation-dims]") == "(batch, token, head, feature)"
    page.locator(MAIN).screenshot(path=str(artifacts / "plot_token_by_head_feature.png"))
    # SDPA's own output: a tile per head, each with ticks, the grid's axes named once
    _select(page, sdpa.label)
    axes = _layout(page, sdpa.label)
    tiles = [a for k, a in axes.items() if k.startswith("xaxis")]
    assert len(tiles) == 2 and all(t["visible"] for t in tiles)
    titles = {a["title"] for a in axes.values() if a["title"]}
    assert titles == {"token", "feature"}
    page.locator(MAIN).screenshot(path=str(artifacts / "plot_head_tiles.png"))
    assert page.errors == []


def test_a_gru_cell_state_plots_batch_by_hidden(page) -> None:
    case = gru_cell_lm()
    widget = LensWidget(case.model, case.args)
    # A recurrent loop that would not fit unrolled opens rolled (#24): its cell is one node
    cell = next(op.layer for op in widget.model_log.ops if op.func == "gru_cell")
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    assert lens(page, "view") == "rolled"
    _select(page, cell)
    axes = _layout(page, cell)
    assert (axes["xaxis"]["title"], axes["yaxis"]["title"]) == ("hidden", "batch")
    assert page.inner_text("[data-testid=activation-dims]") == "(batch, hidden)"
    hist = page.evaluate(
        "() => { const l = document.querySelector('[data-testid=plot-hist]').layout;"
        " return [l.xaxis.title.text, l.yaxis.title.text]; }"
    )
    assert hist == ["value", "count"]
    assert page.errors == []


def test_a_comparison_says_which_side_each_plot_shows(page) -> None:
    case = gpt2()
    a = lw.trace(case.model, case.args, case.kwargs)
    ids = case.args[0]
    b = lw.trace(case.model, (ids.flip(1),), case.kwargs)  # other tokens: B's values differ
    widget = LensWidget.compare(a, b)
    sdpa = next(op.label for op in a.ops if op.func == "scaled_dot_product_attention")
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    _select(page, sdpa)
    page.select_option("[data-testid=compare-side]", "diff")
    wait_idle(page)
    page.wait_for_function(
        "() => ['done', 'error', 'unavailable'].includes("
        "document.querySelector('[data-testid=activation]').dataset.state)"
    )
    status = page.inner_text("[data-testid=activation-status]")
    assert page.get_attribute("[data-testid=activation]", "data-state") == "done", status
    assert page.text_content("[data-testid=activation-title]") == "activation (A − B)"
    assert page.text_content("[data-testid=attention-title]") == "attention weights (A)"
    assert page.errors == []
