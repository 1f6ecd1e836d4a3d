"""Metric overlays, the first NaN/Inf button and a comparison, in the built widget answered by
the real kernel code (LensWidget's own message handler) on real traced models."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import torch
from lens_harness import click_item, lens, open_widget, wait_idle, widget_kernel
from test_gradients_page import cut_off_widget
from torch import nn

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget


class Planted(nn.Module):
    """Finite until log(h - 10), which makes the NaN; the ops after it read it."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.enc(x)
        return self.head(torch.log(h - 10)) * 2


def colors(page, ids: list[str]) -> dict[str, str | None]:
    return {i: page.evaluate("(id) => window.__el.__lens.overlayColor(id)", i) for i in ids}


def pixel(page, item_id: str) -> list[int]:
    """The canvas pixel a few px inside the item's left edge, centre height."""
    pos = page.evaluate("(id) => window.__el.__lens.nodeScreenPos(id)", item_id)
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    x, y = pos["x"] - canvas["x"], pos["y"] - canvas["y"]
    return page.evaluate(
        """([x, y]) => {
          const c = document.querySelector('[data-testid=graph-canvas]');
          const px = c.getContext('2d').getImageData(Math.round(x), Math.round(y) + 8, 1, 1);
          return Array.from(px.data);
        }""",
        [x, y],
    )


NOTE = "document.querySelector('[data-testid=overlay-note]').textContent"
RANGE = "document.querySelector('[data-testid=overlay-range]').textContent"
ACTIVATIONS = "window.__fake.log.sent.filter(m => m.method === 'activation')"


def pick(page, metric: str) -> None:
    page.select_option("[data-testid=metric-picker]", metric)
    page.wait_for_function(f"() => !{NOTE}")
    if metric:
        page.locator("[data-testid=overlay-legend]").wait_for(state="visible", timeout=5000)


def test_picking_a_metric_colors_nodes_and_shows_the_legend(page, artifacts) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh())
    w = LensWidget(model, (torch.randn(8, 16),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    ops = [n["id"] for n in w.graph["unrolled"]["nodes"] if n["kind"] == "op"]
    shown = [i for i in lens(page, "visibleIds") if i in ops]
    assert shown, lens(page, "visibleIds")
    assert set(colors(page, shown).values()) == {None}  # no overlay yet: colors by kind
    before = pixel(page, shown[0])
    assert page.locator("[data-testid=overlay-legend]").is_hidden()

    pick(page, "params")
    wait_idle(page)
    got = colors(page, shown)
    # linear_1_1 has 16*64+64 params, linear_1_3 64*64+64: the top and bottom of the ramp
    assert got["linear_1_1"] != got["linear_2_3"]
    assert all(c and c.startswith(("rgb(", "#")) for c in got.values()), got
    # 0 params is none, in its own color, not the ramp's bottom, which the smaller Linear has
    assert got["relu_1_2"] == got["tanh_1_4"] == "#ffffff"
    assert got["linear_1_1"] == "rgb(68,1,84)" and got["linear_2_3"] == "rgb(253,231,37)"
    legend = page.locator("[data-testid=overlay-range]").inner_text()
    assert "params" in legend and "1.09k" in legend and "4.16k" in legend and "linear" in legend
    assert page.locator("[data-testid=legend-zero]").inner_text() == "0 params"
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    assert pixel(page, shown[0]) != before  # the canvas really changed
    page.screenshot(path=str(artifacts / "overlay_params.png"))

    page.check("[data-testid=metric-log]")
    page.wait_for_function(f"() => {RANGE}.includes('log')")
    # two amounts span the log ramp as they span the linear one; 0 params is still none
    assert colors(page, ["relu_1_2", "linear_1_1", "linear_2_3"]) == {
        "relu_1_2": "#ffffff",
        "linear_1_1": "rgb(68,1,84)",
        "linear_2_3": "rgb(253,231,37)",
    }

    pick(page, "")  # back to colors by kind
    assert set(colors(page, shown).values()) == {None}
    assert page.locator("[data-testid=overlay-legend]").is_hidden()
    assert page.errors == []


def flops_on_collapsed_modules(page) -> None:
    """A Sequential in a Sequential, every module collapsed, colored by FLOPs."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), nn.Linear(8, 2))
    w = LensWidget(model, (torch.randn(2, 8),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    pick(page, "flops")
    wait_idle(page)


def test_collapsed_module_gets_the_aggregate_and_rolled_view_works(page) -> None:
    flops_on_collapsed_modules(page)
    groups = [i for i in lens(page, "visibleIds") if i.startswith("@")]
    assert groups == ["@0:1", "@1:1"]
    # the module's sum (its linear: 2*2*8*8 FLOPs, its relu 2*8) tops the ramp; the head's
    # 2*2*8*2 sits above the graph's smallest amount (the relu's), below the top
    got = colors(page, groups)
    assert got["@0:1"] == "rgb(253,231,37)"
    assert got["@1:1"] not in ("rgb(253,231,37)", "rgb(68,1,84)")
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    page.wait_for_function("() => window.__el.__lens.overlayColor('@0') !== null")
    assert colors(page, ["@0", "@1"]) == {"@0": "rgb(253,231,37)", "@1": got["@1:1"]}
    assert page.errors == []


def test_a_collapsed_modules_labels_read_on_its_overlay_color(page, tmp_path) -> None:
    """Dark text on the ramp's dark end (or light text on its yellow, in a dark theme) cannot
    be read: a collapsed module's three lines take the color an op's label takes there."""
    flops_on_collapsed_modules(page)
    with page.expect_download() as info:  # the SVG draws what the canvas draws, as text
        page.click("[data-testid=export-svg]")
    path = tmp_path / "view.svg"
    info.value.save_as(path)
    svg = ET.fromstring(path.read_text(encoding="utf-8"))
    fills = {el.text: el.get("fill") for el in svg.iter("{http://www.w3.org/2000/svg}text")}
    # "@1:1" (the head) is at the ramp's dark bottom, "@0:1" at its yellow top
    assert fills["Linear"] == fills["1"] == fills["1 op → 2×2"] == "#ffffff", fills
    assert fills["Sequential"] == fills["0"] == "#1f2933", fills
    assert page.errors == []


def test_first_nonfinite_button_selects_the_op_that_made_the_nan(page, artifacts) -> None:
    torch.manual_seed(0)
    w = LensWidget(Planted(), (torch.randn(3, 4),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=first-nonfinite]")
    page.wait_for_function("() => window.__el.__lens.selected === 'log_1_4'")
    wait_idle(page)
    assert page.locator("[data-testid=inspector]").is_visible()
    assert "first NaN/Inf: log_1_4" in page.locator("[data-testid=overlay-note]").inner_text()
    # the op that made it and those after it are marked; those before are not
    page.wait_for_function("() => window.__el.__lens.overlayFlagged('log_1_4')")
    assert lens(page, "overlayFlagged('relu_1_2')") is False
    page.screenshot(path=str(artifacts / "overlay_first_nan.png"))
    assert page.errors == []


def test_marks_drawn_without_a_metric_are_explained_in_the_legend(page, artifacts) -> None:
    """With no metric picked (the widget as it opens), red NaN/Inf corners and the dashed
    "got no gradient" outlines are drawn: the legend says what they are, and only those."""
    torch.manual_seed(0)
    w = LensWidget(Planted(), (torch.randn(3, 4),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.wait_for_function("() => window.__el.__lens.overlayFlagged('log_1_4')")
    legend = page.locator("[data-testid=overlay-legend]")
    legend.wait_for(state="visible")
    assert legend.inner_text() == "NaN/Inf output"
    page.screenshot(path=str(artifacts / "legend_nan_marks.png"))
    assert page.errors == []


def test_the_no_gradient_outline_is_explained_without_a_metric(page) -> None:
    # a training step whose aux branch got no gradient, as it opens (kind colors)
    w = cut_off_widget()
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.wait_for_function("() => window.__el.__lens.overlayStarved('linear_2_3')")  # aux's
    legend = page.locator("[data-testid=overlay-legend]")
    legend.wait_for(state="visible")
    assert legend.inner_text() == "got no gradient"  # no NaN/Inf here: not listed
    assert page.errors == []


def test_first_nonfinite_with_ops_not_saved_says_it_looked_at_saved_ones(page) -> None:
    """Only saved ops have values to look at: with some left out, finding none is no proof
    that no op produced a NaN/Inf, and the note says what was looked at."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh())
    w = LensWidget(model, (torch.randn(3, 4),), save=["linear"])
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=first-nonfinite]")
    page.wait_for_function(f"() => !{NOTE}.startsWith('looking')")
    assert page.inner_text("[data-testid=overlay-note]") == (
        "no saved op produced a NaN/Inf (2 of 4 ops not saved)"
    )
    assert lens(page, "selected") == ""
    assert page.errors == []


def test_comparison_colors_by_difference_and_plots_a_b_and_a_minus_b(page, artifacts) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 3))
    x = torch.randn(2, 6)
    a = lw.trace(model, x)
    with torch.no_grad():
        model[2].weight[0, 0] += 1.0  # changes only the last linear
    b = lw.trace(model, x)
    w = LensWidget.compare(a, b)
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.locator("[data-testid=overlay-legend]").wait_for(state="visible")
    page.wait_for_function("() => window.__el.__lens.overlayColor('linear_2_3') !== null")
    assert page.locator("[data-testid=metric-picker]").input_value() == "relL2"
    got = colors(page, ["linear_1_1", "relu_1_2", "linear_2_3"])
    assert got["linear_1_1"] == got["relu_1_2"] == "rgb(68,1,84)"  # upstream: no difference
    assert got["linear_2_3"] == "rgb(253,231,37)"
    assert page.locator("[data-testid=compare-side]").is_visible()

    click_item(page, "linear_2_3")
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    page.screenshot(path=str(artifacts / "compare_side_a.png"))
    for side in ("b", "diff"):
        page.select_option("[data-testid=compare-side]", side)
        page.wait_for_function(
            f"(side) => {ACTIVATIONS}.some(m => m.params.side === side)",
            arg=side,
        )
        page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    sides = page.evaluate(f"() => {ACTIVATIONS}.map(m => m.params.side)")
    assert sides[:1] == ["a"] and "b" in sides and "diff" in sides
    assert not page.locator(".lens-act-error").count()
    page.screenshot(path=str(artifacts / "compare_side_diff.png"))
    assert page.errors == []


def test_a_comparison_without_difference_colors_every_op_as_none(page) -> None:
    """All differences 0 (a deterministic re-run): the legend reads 0 to 0 and every op has
    the ramp's bottom color, not its middle one, which reads as some difference."""
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(6, 6), nn.ReLU()), torch.randn(2, 6)
    w = LensWidget.compare(lw.trace(model, x), lw.trace(model, x))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.wait_for_function("() => window.__el.__lens.overlayColor('relu_1_2') !== null")
    assert colors(page, ["linear_1_1", "relu_1_2"]) == {
        "linear_1_1": "rgb(68,1,84)",
        "relu_1_2": "rgb(68,1,84)",
    }
    assert page.errors == []


class _Doubled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.double = nn.Linear(4, 4), False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        return (h * 2 if self.double else h).tanh()


def test_an_op_only_in_a_says_it_has_no_b_side_without_asking(page) -> None:
    """B runs one more op, so A's tanh has no match: its B and A − B sides are not an error
    to retry, and the kernel is not asked for them."""
    torch.manual_seed(0)
    model, x = _Doubled(), torch.randn(2, 4)
    a = lw.trace(model, x)
    model.double = True
    w = LensWidget.compare(a, lw.trace(model, x))
    assert w.comparison.only_a == ["tanh_1_3"]
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, "tanh_1_3")
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    section = page.locator("[data-testid=activation]")
    for side, name in (("b", "B"), ("diff", "A − B")):
        page.select_option("[data-testid=compare-side]", side)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=activation]').dataset.state "
            "=== 'unavailable'"
        )
        assert section.inner_text().endswith(f"this op ran only in A: there is no {name} to show")
        assert section.get_by_role("button", name="Retry").count() == 0
    sent = page.evaluate(f"() => {ACTIVATIONS}.map(m => m.params.side)")
    assert sent == ["a"]
    page.select_option("[data-testid=compare-side]", "a")  # and A plots again
    page.wait_for_function(
        "() => document.querySelector('[data-testid=activation]').dataset.state === 'done'"
    )
    assert page.errors == []


@pytest.mark.parametrize("metric", ["maxAbs", "cosine"])
def test_comparison_offers_the_other_differences(page, metric) -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    w = LensWidget.compare(lw.trace(model, torch.randn(2, 4)), lw.trace(model, torch.randn(2, 4)))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    pick(page, metric)
    label = {"maxAbs": "difference (max abs)", "cosine": "cosine (A, B)"}[metric]
    assert label in page.locator("[data-testid=overlay-range]").inner_text()
    assert page.errors == []
