"""The rank view in the built widget, answered by the real kernel code: the per-rank logs of
a tensor-parallel step (LensWidget.from_logs). A person sees the all_reduce drawn as a
collective, reads its group and bytes in the inspector, colors by bytes communicated, picks
rank 1 and sees another rank's values on the same layout, then compares rank 1 with rank 0
and sees where the shards differ (before the all_reduce) and where they agree (after it).

The logs are made in one process (model_zoo/per_rank.py, rank, world size and the collective
set by hand) until the capture side of issue #22 traces real gloo ranks."""

from __future__ import annotations

from lens_harness import click_item, lens, open_widget, reveal, wait_idle, widget_kernel
from test_device_overlay import canvas_colors
from test_overlays import ACTIVATIONS, pick
from test_standalone_html import open_from_disk

from lens_widget.widget.lens_widget import LensWidget
from model_zoo.per_rank import tensor_parallel_logs

COLLECTIVE_STROKE = "rgb(232,89,12)"  # js/src/ranks/collectives.ts
NO_VALUE = "#dee2e6"  # render/overlayLegend.ts NO_VALUE_COLOR
RAMP_BOTTOM = "rgb(68,1,84)"  # render/overlay.ts: a difference of 0
SHOWN = "document.querySelector('[data-testid=rank-bar]').dataset.shown"
STATS = "(document.querySelector('[data-testid=stats]')?.textContent ?? '')"


def wait_shown(page, what: str) -> None:
    page.wait_for_function(f"() => {SHOWN} === {what!r}", timeout=20000)
    wait_idle(page)


def stats_after(page, before: str) -> str:
    page.wait_for_function(f"(b) => {STATS} && {STATS} !== b", arg=before, timeout=20000)
    return page.evaluate(f"() => {STATS}")


def test_the_rank_picker_switches_values_and_compares_two_ranks(page, artifacts) -> None:
    w = LensWidget.from_logs(tensor_parallel_logs())
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    bar = page.locator("[data-testid=rank-bar]")
    assert bar.is_visible() and page.input_value("[data-testid=rank-picker]") == "0"
    assert "showing rank 0 of 2" in page.text_content("[data-testid=rank-caption]")

    # the all_reduce is drawn as a collective: its label, its own outline color
    reveal(page, "add_1_4")
    assert lens(page, "itemLines('add_1_4')") == ["⇄ all_reduce", "2 ranks · 4×16"]
    assert COLLECTIVE_STROKE in canvas_colors(page, "add_1_4")
    reveal(page, "relu_2_5")
    assert COLLECTIVE_STROKE not in canvas_colors(page, "relu_2_5")
    # colored by bytes communicated: the collective has a value, the other ops none
    pick(page, "commBytes")
    wait_idle(page)
    colored = page.evaluate("() => window.__el.__lens.overlayColor('add_1_4')")
    assert colored.startswith("rgb(") and colored != NO_VALUE
    assert COLLECTIVE_STROKE in canvas_colors(page, "add_1_4")  # still drawn as a collective
    assert page.evaluate("() => window.__el.__lens.overlayColor('relu_2_5')") == NO_VALUE
    pick(page, "")
    # its group, bytes, phase and engine in the inspector
    click_item(page, "add_1_4")
    inspector = page.locator("[data-testid=inspector]")
    page.locator("[data-testid=inspector-collective]").wait_for()
    assert page.text_content("[data-testid=inspector-collective]") == "all_reduce"
    facts = inspector.locator("[data-testid=inspector-facts]").text_content()
    assert "2 ranks: 0, 1" in facts and "dtensor" in facts and "forward" in facts
    # a sharded parameter says how it is sharded
    page.check("[data-testid=toggle-params]")
    wait_idle(page)
    click_item(page, "fc1.weight")
    page.locator("[data-testid=inspector-placement]").wait_for()
    assert page.text_content("[data-testid=inspector-placement]") == ("Shard(dim=0) on mesh (tp=2)")
    page.uncheck("[data-testid=toggle-params]")
    wait_idle(page)

    # rank 1: the selected op's values are rank 1's, on the same layout
    click_item(page, "linear_1_1")
    at_0 = stats_after(page, "")
    camera = lens(page, "camera")
    page.select_option("[data-testid=rank-picker]", "1")
    wait_shown(page, "1|")
    at_1 = stats_after(page, at_0)
    assert at_1 != at_0
    assert lens(page, "selected") == "linear_1_1"
    assert lens(page, "camera") == camera, "another rank's values, the same view"
    assert "showing rank 1 of 2" in page.text_content("[data-testid=rank-caption]")

    # compare rank 1 with rank 0: colored by the relative difference, per op
    page.select_option("[data-testid=rank-compare]", "0")
    wait_shown(page, "1|0")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=metric-picker]').value === 'relL2'"
    )
    page.wait_for_function("() => window.__el.__lens.overlayColor('linear_3_6') !== null")
    wait_idle(page)
    differ = {i: lens(page, f"overlayColor({i!r})") for i in ("linear_1_1", "linear_2_3")}
    agree = {i: lens(page, f"overlayColor({i!r})") for i in ("add_1_4", "linear_3_6")}
    assert set(agree.values()) == {RAMP_BOTTOM}, agree  # the same after the all_reduce
    assert RAMP_BOTTOM not in differ.values(), differ  # each rank's own shard before it
    assert "rank 1 (A) compared with rank 0 (B)" in page.text_content("[data-testid=rank-caption]")
    page.select_option("[data-testid=compare-side]", "diff")
    page.wait_for_function(f"() => {ACTIVATIONS}.some(m => m.params.side === 'diff')")
    page.locator("[data-testid=stats]").wait_for()
    page.screenshot(path=str(artifacts / "rank_picker_compare.png"), full_page=True)

    # back to one rank: the comparison ends
    page.select_option("[data-testid=rank-compare]", "")
    wait_shown(page, "1|")
    assert not page.locator("[data-testid=compare-side]").is_visible()
    assert page.errors == []


def test_a_saved_page_shows_its_rank_and_says_the_others_need_the_kernel(page, tmp_path) -> None:
    w = LensWidget.from_logs(tensor_parallel_logs())
    w.rank = 1
    open_from_disk(page, w.save_html(tmp_path / "ranks.html"))
    page.locator("[data-testid=rank-bar]").wait_for()
    assert page.input_value("[data-testid=rank-picker]") == "1"
    assert page.is_disabled("[data-testid=rank-picker]")
    assert page.is_disabled("[data-testid=rank-compare]")
    assert "need the notebook's kernel" in page.text_content("[data-testid=rank-note]")
    assert page.errors == []
