"""Ablating an op from the inspector, in the built widget answered by LensWidget's own
message handler on a real traced model: one click re-runs the model with the op zeroed and
shows clean vs ablated; "back to the trace" returns to the plain view."""

from __future__ import annotations

import torch
from folding_blocks import two_folding_blocks
from lens_harness import click_item, lens, open_widget, wait_idle, widget_kernel
from torch import nn

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget

BOTTOM = "rgb(68,1,84)"  # the ramp's zero: no difference
BANNER = "[data-testid=ablation-banner]"
ACTIVATIONS = "window.__fake.log.sent.filter(m => m.method === 'activation')"


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))


def colors(page, ids: list[str]) -> dict[str, str | None]:
    return {i: page.evaluate("(id) => window.__el.__lens.overlayColor(id)", i) for i in ids}


def shown_stats(page) -> str:
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    return page.locator(".lens-stats").inner_text()


def test_ablate_an_op_in_one_click_then_go_back(page, artifacts) -> None:
    w = LensWidget(mlp(), (torch.randn(4, 6),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    wait_idle(page)
    assert page.locator(BANNER).is_hidden()

    click_item(page, "relu_1_2")
    ablate = page.locator("[data-testid=ablate]")
    ablate.wait_for(state="visible")
    dims = page.locator("[data-testid=ablate-dim] option").all_inner_texts()
    assert len(dims) == 2 and "size 8" in dims[1]  # the op's (4, 8) output
    page.click("[data-testid=ablate-button]")

    # the banner says what was ablated; the graph is colored by the difference
    page.locator(BANNER).wait_for(state="visible")
    assert "relu_1_2 zeroed" in page.locator("[data-testid=ablation-text]").inner_text()
    page.wait_for_function("() => window.__el.__lens.overlayColor('linear_3_5') !== null")
    wait_idle(page)
    assert page.locator("[data-testid=metric-picker]").input_value() == "relL2"
    got = colors(page, ["linear_1_1", "relu_1_2", "linear_2_3", "tanh_1_4", "linear_3_5"])
    assert got["linear_1_1"] == BOTTOM  # upstream of the ablation: no difference
    for label in ("relu_1_2", "linear_2_3", "tanh_1_4", "linear_3_5"):
        assert got[label] not in (None, BOTTOM), (label, got)
    assert page.locator("[data-testid=overlay-legend]").is_visible()
    assert page.locator("[data-testid=compare-side]").is_visible()
    assert lens(page, "selected") == "relu_1_2"  # the selection stays on the ablated op
    page.screenshot(path=str(artifacts / "ablation_zero.png"))

    # a downstream op: the inspector plots A (clean), B (ablated) and A − B
    click_item(page, "linear_2_3")
    stats = {"a": shown_stats(page)}
    title = page.locator("[data-testid=activation-title]")
    assert title.text_content() == "activation (A)"  # the section says which is plotted
    for side in ("b", "diff"):
        page.select_option("[data-testid=compare-side]", side)
        expect_title = {"b": "activation (B)", "diff": "activation (A − B)"}[side]
        page.wait_for_function(
            "(t) => document.querySelector('[data-testid=activation-title]').textContent === t",
            arg=expect_title,
        )
        page.wait_for_function(
            f"(side) => {ACTIVATIONS}.some(m => m.params.side === side && m.params.id === "
            "'linear_2_3')",
            arg=side,
        )
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=activation-status]').textContent"
        )
        stats[side] = shown_stats(page)
    assert len(set(stats.values())) == 3, stats  # three different tensors
    assert not page.locator(".lens-act-error").count()
    page.screenshot(path=str(artifacts / "ablation_diff.png"))

    # back to the trace: no banner, no difference colors, one plain side
    page.click("[data-testid=ablation-back]")
    page.locator(BANNER).wait_for(state="hidden")
    wait_idle(page)
    assert page.locator("[data-testid=metric-picker]").input_value() == ""
    assert set(colors(page, ["linear_1_1", "linear_2_3"]).values()) == {None}
    assert page.locator("[data-testid=compare-side]").is_hidden()
    assert title.text_content() == "activation"
    assert w.comparison is None and "ablation" not in w.graph
    assert page.errors == []


def test_a_widget_without_a_model_offers_no_ablation(page) -> None:
    """A widget built from a log has no model to re-run: the inspector offers no Ablate
    button (one that could only fail), and a saved activation still plots."""
    log = lw.trace(mlp(), torch.randn(4, 6))
    w = LensWidget.from_log(log)
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, "linear_2_3")
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    assert page.locator("[data-testid=ablate]").is_hidden()
    assert page.locator(BANNER).is_hidden()
    assert page.errors == []


def test_the_ablate_button_says_what_a_view_switch_makes_it_ablate(page) -> None:
    """The rolled view folds a repeated block onto its first one, whose op keeps its label:
    after a switch the same id is one op, and the button and the banner say so."""
    torch.manual_seed(0)
    w = LensWidget(*two_folding_blocks())
    assert w.model_log.repeated_blocks == [["0", "1"]]
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    click_item(page, "relu_1_2")
    button = page.locator("[data-testid=ablate-button]")
    button.wait_for(state="visible")
    assert button.inner_text() == "Ablate all 2 passes"
    page.click("[data-testid=view-unrolled]")
    wait_idle(page)
    assert lens(page, "selected") == "relu_1_2"
    assert button.inner_text() == "Ablate"
    button.click()
    page.locator(BANNER).wait_for(state="visible")
    assert page.locator("[data-testid=ablation-text]").inner_text() == "Ablated: relu_1_2 zeroed."
    assert w.ablation is not None and w.ablation.passes == ("relu_1_2",)
    assert page.errors == []
