"""Overlays that inform, gradients that read (issue 24, points 6 and 16), in the built widget on
a plain page with the real request handler: on a GPT-2 training step the gradient-norm overlay
opens on a log scale and its legend says so and what its range spans (the whole graph: it stays
as modules open); the backward panel lists each leaf's gradient norm, sorted, those that got
none first and marked; the graph keeps half the width with both side panels open."""

from __future__ import annotations

import re

import pytest
import torch
from lens_harness import click_item, open_widget, wait_idle, widget_kernel

from lens_widget.widget.lens_widget import LensWidget
from model_zoo.language import gpt2
from tests.python.gradient_fixture import CutOff, traced_with_grads

RANGE = "[data-testid=overlay-range]"


@pytest.fixture(scope="module")
def gpt2_step() -> LensWidget:
    torch.manual_seed(0)
    case = gpt2()
    return LensWidget.from_log(traced_with_grads(case.model, case.args, case.kwargs))


def graph_share(page) -> float:
    """The graph column's share of the width beside the side panels."""
    return page.evaluate(
        """() => document.querySelector('.lens-graph-col').getBoundingClientRect().width
                 / document.querySelector('.lens-main').getBoundingClientRect().width"""
    )


def legend(page) -> str:
    return page.inner_text(RANGE)


def bounds(text: str) -> tuple[str, str]:
    """The two numbers around the legend's ramp."""
    found = re.search(r"\(max\) (\S+)\s+(\S+) ·", text)
    assert found, text
    return found.group(1), found.group(2)


def test_grad_norm_overlay_opens_on_a_log_scale_that_stays_as_modules_open(
    page, gpt2_step, artifacts
):
    log = gpt2_step.model_log
    norms = [float(torch.linalg.vector_norm(op.grad)) for op in log.ops if op.grad is not None]
    assert max(norms) / min(n for n in norms if n > 0) > 100  # more than two decades
    open_widget(page, gpt2_step.graph, python_kernel=widget_kernel(gpt2_step))
    page.select_option("[data-testid=metric-picker]", "gradNorm")
    page.wait_for_function(f"() => document.querySelector('{RANGE}')?.textContent.includes('auto')")
    text = legend(page)
    assert "gradient norm (max)" in text and "· log (auto:" in text and "decades" in text
    assert "range of the whole graph" in text
    assert page.is_checked("[data-testid=metric-log]")  # the box shows the scale in use
    page.screenshot(path=str(artifacts / "grad_norm_log_legend.png"))

    # opening modules changes the colours of what opens, not the range
    before = bounds(text)
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    assert bounds(legend(page)) == before
    # the range of the items shown, said so, moves with them
    page.select_option("[data-testid=metric-range]", "shown")
    page.wait_for_function(
        f"() => /range of the \\d+ shown/.test(document.querySelector('{RANGE}').textContent)"
    )
    shown_count = int(re.search(r"range of the (\d+) shown", legend(page)).group(1))
    colored = page.evaluate(
        "() => { const l = window.__el.__lens;"
        " return l.visibleIds.filter((id) => l.overlayColor(id) !== null).length; }"
    )
    assert shown_count == colored

    # a choice of the user's sticks: linear, no longer "auto"
    page.select_option("[data-testid=metric-range]", "graph")
    page.uncheck("[data-testid=metric-log]")
    page.wait_for_function(
        f"() => document.querySelector('{RANGE}').textContent.includes('· linear')"
    )
    assert "auto" not in legend(page)
    assert page.errors == []


def test_leaves_panel_shows_norms_sorted_and_marks_those_without(page, artifacts):
    torch.manual_seed(0)
    w = LensWidget.from_log(traced_with_grads(CutOff(), torch.randn(5, 6)))
    open_widget(page, w.graph, python_kernel=widget_kernel(w), width=1240)
    page.click("[data-testid=toggle-backward]")
    panel = page.locator("[data-testid=gradient-panel]")
    rows = panel.locator("[data-testid=leaf-row]")
    rows.first.wait_for()
    names = rows.evaluate_all("els => els.map(e => e.dataset.name)")
    statuses = rows.locator("[data-testid=leaf-status]").all_inner_texts()
    # those that got none first, marked; then the others by norm, largest first
    assert names[:2] == ["aux.weight", "aux.bias"] and statuses[:2] == ["no gradient"] * 2
    leaves = w.model_log.leaves
    want = sorted(
        (n for n in names[2:]), key=lambda n: -float(torch.linalg.vector_norm(leaves[n].grad))
    )
    assert names[2:] == want
    shown = rows.evaluate_all("els => els.map(e => Number(e.dataset.norm || NaN))")[2:]
    for name, norm in zip(names[2:], shown, strict=True):
        assert norm == pytest.approx(float(torch.linalg.vector_norm(leaves[name].grad)), rel=1e-5)
    assert all(s.startswith("gradient norm ") for s in statuses[2:])
    assert rows.nth(2).locator(".lens-leaf-bar").count() == 1
    # by name, the ones without gradient stay first
    page.select_option("[data-testid=leaf-sort]", "name")
    names = rows.evaluate_all("els => els.map(e => e.dataset.name)")
    assert names[:2] == ["aux.bias", "aux.weight"] and names[2:] == sorted(names[2:])

    # inspector and backward panel open: the graph keeps at least half the width
    click_item(page, "relu_1_2")
    page.locator("[data-testid=inspector-id]").wait_for()
    assert graph_share(page) >= 0.5 - 1e-3
    page.screenshot(path=str(artifacts / "leaves_sorted_by_norm.png"))
    # narrow: the backward panel lies over the graph instead of squeezing it
    page.evaluate("() => document.documentElement.style.setProperty('--lens-test-width', '600px')")
    page.set_viewport_size({"width": 660, "height": 900})
    page.wait_for_function(
        "() => getComputedStyle(document.querySelector('.lens-grad-panel')).position === 'absolute'"
    )
    assert graph_share(page) >= 0.5 - 1e-3
    assert page.errors == []
