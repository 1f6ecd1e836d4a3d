"""The standalone HTML page opened from disk (file://) with every network request blocked:
the graph is interactive, a click plots the embedded activation, and the page says what it
left out to stay within its size budget."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from lens_harness import click_item, lens, wait_idle
from torch import nn

import lens_widget as lw
from lens_widget.widget.html_export import BUNDLE, page_blocks
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.skipif(not BUNDLE.exists(), reason="frontend bundle not built")
LOCAL = ("file://", "blob:", "data:")


@pytest.fixture(scope="module")
def gpt2_log() -> lw.ModelLog:
    case = TEST_MODELS["gpt2"]()
    return lw.trace(case.model, case.args, case.kwargs)


def open_from_disk(page, path: Path) -> list[str]:  # noqa: ANN001
    """Opens `path` as file://, aborting every other request; returns the aborted URLs."""
    url = path.resolve().as_uri()
    aborted: list[str] = []

    def only_the_file(route) -> None:  # noqa: ANN001
        if route.request.url == url:
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort()

    page.route("**", only_the_file)
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_function("() => !!document.getElementById('lens-app').__lens", timeout=30_000)
    page.evaluate("() => { window.__el = document.getElementById('lens-app'); }")
    wait_idle(page)
    return aborted


def embedded_views(path: Path) -> dict:
    return json.loads(page_blocks(path.read_text())["views"])


def first_visible(page, want: Callable[[str], bool]) -> str:  # noqa: ANN001
    return next(i for i in lens(page, "visibleIds") if not i.startswith("@") and want(i))


def test_page_from_disk_with_network_blocked_is_interactive(gpt2_log, page, tmp_path, artifacts):
    path = gpt2_log.to_html(tmp_path / "gpt2.html")
    aborted = open_from_disk(page, path)

    # expand a module by clicking it
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    assert "@transformer:1" in lens(page, "visibleIds")
    click_item(page, "@transformer:1")
    wait_idle(page)
    assert "transformer" in lens(page, "expanded")
    # the blocks inside: one stack box (GPT2Block ×N) or the blocks themselves
    assert any(i.startswith("@transformer.h.0") for i in lens(page, "visibleIds"))

    # click an op: its facts, then its plot from the page's own data
    kinds = {r.label: r.kind for r in gpt2_log.nodes}
    op = first_visible(page, lambda i: kinds.get(i) == "op" and gpt2_log[i].saved)
    click_item(page, op)
    assert page.locator("[data-testid=inspector-id]").inner_text().strip() == op
    page.locator("[data-testid=plot-main] .main-svg").first.wait_for(timeout=20_000)
    page.locator("[data-testid=stats]").wait_for()
    numel = gpt2_log[op].activation.numel()
    assert f"{numel:,}" in page.locator("[data-testid=stats]").inner_text()
    page.screenshot(path=str(artifacts / "standalone_html.png"))

    # rolled view and search work as in the notebook
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    assert lens(page, "view") == "rolled"
    page.fill("[data-testid=search]", "layer_norm")
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    layer = lens(page, "selected")
    assert gpt2_log.rolled_graph.nodes[layer]["records"][0].func == "layer_norm"
    assert page.locator("[data-testid=inspector-id]").inner_text().strip() == layer
    page.wait_for_function(
        "() => document.querySelector('[data-testid=activation]')?.dataset.state === 'done'"
    )

    # nothing but the file itself (and blob:/data: URLs made in the page) was requested
    assert aborted == []
    assert page.request_urls and all(u.startswith(LOCAL) for u in page.request_urls)
    assert page.errors == []


def test_page_says_which_activations_it_left_out(gpt2_log, page, tmp_path):
    with pytest.raises(ValueError, match=r"\(([\d,]+) bytes") as err:
        gpt2_log.to_html(tmp_path / "x.html", max_bytes=1)
    base = int(re.search(r"\(([\d,]+) bytes", str(err.value)).group(1).replace(",", ""))
    path = gpt2_log.to_html(tmp_path / "small.html", max_bytes=base + 60_000)
    views = embedded_views(path)
    kept = {v["result"]["id"] for v in views["views"]}
    open_from_disk(page, path)
    note = page.locator("#lens-page-note").inner_text()
    assert f"{len(views['views'])} of {views['total']} activations" in note and "left out" in note

    status = page.locator("[data-testid=activation-status]")
    page.click("[data-testid=expand-all]")  # the first view may show only folded blocks
    wait_idle(page)

    def unavailable(item: str) -> str:
        click_item(page, item)
        page.wait_for_function(
            """(id) => document.querySelector('[data-testid=inspector-id]')?.textContent === id
                 && document.querySelector('[data-testid=activation]')?.dataset.state
                    === 'unavailable'""",
            arg=item,
        )
        assert page.locator("[data-testid=activation] button").count() == 0  # no vain Retry
        return status.inner_text()

    left_out = first_visible(page, lambda i: gpt2_log[i].kind == "op" and i not in kept)
    assert "left out of this page" in unavailable(left_out)
    # parameters have no view unless the page was written with weights=True
    page.click("[data-testid=toggle-params]")
    wait_idle(page)
    weight = first_visible(page, lambda i: gpt2_log[i].kind == "param")
    assert unavailable(weight) == (
        "parameter and buffer values are not in this page: write it with weights=True"
    )

    in_page = first_visible(page, lambda i: i in kept and gpt2_log[i].kind == "op")
    click_item(page, in_page)
    page.locator("[data-testid=plot-main] .main-svg").first.wait_for(timeout=20_000)
    assert all(u.startswith(LOCAL) for u in page.request_urls)
    assert page.errors == []


def test_a_meta_device_op_says_it_has_no_values(page, tmp_path):
    """A model traced on the meta device has shapes and no values: the inspector says so
    instead of offering a re-run, which would capture nothing either."""
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    log = lw.trace(model, torch.randn(2, 8, device="meta"))
    open_from_disk(page, log.to_html(tmp_path / "meta.html"))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    click_item(page, "gelu_1_2")
    activation = page.locator("[data-testid=activation]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=activation]')?.dataset.state === 'unavailable'"
    )
    assert "ran on the meta device" in activation.inner_text()
    assert page.locator("[data-testid=rerun]").count() == 0
    assert page.errors == []


def test_the_page_colors_by_metrics_and_finds_nans_without_a_kernel(page, gpt2_log, tmp_path):
    """The color-by picker and "first NaN/Inf" answer from values computed when the page
    was written; what only a kernel could do (ablate, re-run) is not offered at all."""
    open_from_disk(page, gpt2_log.to_html(tmp_path / "metrics.html"))
    note = "document.querySelector('[data-testid=overlay-note]').textContent"
    page.select_option("[data-testid=metric-picker]", "flops")
    page.locator("[data-testid=overlay-legend]").wait_for(state="visible", timeout=5000)
    wait_idle(page)
    shown = [i for i in lens(page, "visibleIds") if gpt2_log.by_label.get(i) is not None]
    colored = [i for i in shown if page.evaluate("(i) => window.__el.__lens.overlayColor(i)", i)]
    assert colored, shown  # ops with a FLOP count are colored on the ramp
    page.select_option("[data-testid=metric-picker]", "time")
    page.wait_for_function(f"() => /no op was timed/.test({note})")

    page.click("[data-testid=first-nonfinite]")
    page.wait_for_function(f"() => {note} === 'no op produced a NaN/Inf'")

    page.click("[data-testid=expand-all]")
    wait_idle(page)
    click_item(page, "embedding_1_2")
    page.locator("[data-testid=plot-main] .main-svg").first.wait_for(timeout=20_000)
    assert page.locator("[data-testid=ablate]").is_hidden()
    assert page.errors == []


def test_an_unsaved_op_in_a_page_says_so_without_offering_a_re_run(page, tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    log = lw.trace(model, torch.randn(3, 4), save=["2"])  # the last Linear only
    open_from_disk(page, log.to_html(tmp_path / "unsaved.html"))
    click_item(page, "relu_1_2")
    status = page.locator("[data-testid=activation-status]")
    status.filter(has_text="not saved in this trace").wait_for(timeout=5000)
    assert "this page has no kernel" in status.inner_text()
    assert page.locator("[data-testid=rerun]").count() == 0
    assert page.errors == []
