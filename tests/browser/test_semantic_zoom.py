"""Semantic zoom (issue 24, item 5): far out (a Fit of GPT-2 with every module open), the graph
names its modules at a readable size instead of dropping all text; op labels go, and no
text is ever drawn smaller than a readable minimum. Plain page harness.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_12_payload
from lens_harness import click_item, lens, open_widget, wait_idle

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


MIN_TEXT_PX = 5  # js/src/render/zoomLevels.ts
OVERVIEW_PX = 12


@pytest.fixture(scope="module")
def gpt2_12() -> dict[str, Any]:
    return gpt2_12_payload()


def frame(page) -> None:
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_fit_far_out_names_the_modules_readably(page, gpt2_12, artifacts) -> None:
    open_widget(page, gpt2_12, width=1340)
    assert lens(page, "minTextPx") >= MIN_TEXT_PX  # the first view: no sub-readable text
    # the 12 blocks side by side under the stack, each with its attention open
    for item in ("@transformer.h.0×12",):
        click_item(page, item)
        wait_idle(page)
    page.click("[data-testid=fit]")
    frame(page)
    scale = lens(page, "scale")
    assert scale < 0.4  # far out: the case the issue names (Fit at 17-34%)
    page.screenshot(path=str(artifacts / "semantic_zoom_fit.png"))
    labels = lens(page, "overviewLabels")
    texts = [x["text"] for x in labels]
    # the structure reads: the blocks by name and number, the model's parts
    assert sum(t.startswith("GPT2Block h.") for t in texts) >= 6, texts
    for name in ("GPT2Block ×12", "Embedding wte", "LayerNorm ln_f"):
        assert name in texts, texts
    assert lens(page, "minTextPx") == OVERVIEW_PX
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    for a in labels:  # on the canvas, none over another
        assert a["x"] + a["w"] > 0 and a["x"] < box["width"], a
        assert a["y"] + a["h"] > 0 and a["y"] < box["height"], a
        for b in labels:
            if a is not b:
                apart = (
                    a["x"] + a["w"] <= b["x"]
                    or b["x"] + b["w"] <= a["x"]
                    or a["y"] + a["h"] <= b["y"]
                    or b["y"] + b["h"] <= a["y"]
                )
                assert apart, (a, b)
    # zoomed back in, every label is drawn at its own size again
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    assert lens(page, "overviewLabels") == []
    assert lens(page, "minTextPx") >= MIN_TEXT_PX
    assert page.errors == []


def test_wheel_zoom_out_never_draws_text_below_the_minimum(page, gpt2_12) -> None:
    open_widget(page, gpt2_12, width=1340)
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    seen = []
    for _ in range(12):
        page.keyboard.down("Control")
        page.mouse.wheel(0, 200)
        page.keyboard.up("Control")
        frame(page)
        px = lens(page, "minTextPx")
        seen.append((lens(page, "scale"), px))
        assert px == 0 or px >= MIN_TEXT_PX, seen
    assert seen[-1][0] < 0.3, seen
    assert page.errors == []
