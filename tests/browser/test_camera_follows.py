"""The camera follows the person (issue 24, item 2): opening a module, a ×N stack or a block
brings what opened into view at a zoom where text still reads, and closing it returns to
where the camera was. GPT-2 with 12 blocks and an attention mask, in the plain page harness.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_12_payload
from lens_harness import click_item, lens, open_widget, reveal, scroll_into_view, wait_idle

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402

STACK = "transformer.h.0×12"
FOLLOW_MIN_SCALE = 0.62  # js/src/render/camera.ts


@pytest.fixture(scope="module")
def gpt2_12() -> dict[str, Any]:
    """GPT-2 with 12 blocks of width 64 (random weights) and an attention mask."""
    return gpt2_12_payload(save=None)


def box_on_screen(page, key: str) -> dict[str, float]:
    """An open module's box in canvas pixels."""
    geo = lens(page, "sceneGeometry()")
    (b,) = [b for b in geo["boxes"] if b["key"] == key]
    cam = lens(page, "camera")
    s = cam["scale"]
    return {
        "x": b["x"] * s + cam["tx"],
        "y": b["y"] * s + cam["ty"],
        "w": b["w"] * s,
        "h": b["h"] * s,
    }


def canvas_size(page) -> tuple[float, float]:
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert box is not None
    return box["width"], box["height"]


def assert_in_view(page, key: str) -> None:
    """The box is on the canvas: whole, or (taller than the canvas at the lowest readable
    zoom) its title and full width, from the top."""
    r = box_on_screen(page, key)
    w, h = canvas_size(page)
    assert lens(page, "scale") >= FOLLOW_MIN_SCALE - 1e-6
    assert r["x"] >= 0 and r["x"] + r["w"] <= w, (key, r, w)
    assert 0 <= r["y"] < h - 40, (key, r, h)
    if r["y"] + r["h"] > h:  # too tall to fit: only at the lowest zoom, showing its top
        assert lens(page, "scale") == pytest.approx(FOLLOW_MIN_SCALE)
        assert r["y"] < 40


def click_and_settle(page, x: float, y: float) -> None:
    """Click, then wait until the layout the click asked for is drawn and the camera placed
    (the layout count moves on and the worker is idle), not merely until the worker is idle,
    which it may still be before the click's layout starts."""
    laid = lens(page, "layoutCount")
    page.mouse.click(x, y)
    page.wait_for_function(
        "(n) => { const l = window.__el.__lens;"
        " return l.layoutCount > n && l.layoutStatus === 'idle'; }",
        arg=laid,
    )
    wait_idle(page)  # and one frame drawn


def test_opening_brings_what_opened_into_view_and_closing_returns(page, gpt2_12, artifacts):
    open_widget(page, gpt2_12, width=1340)
    opened: list[tuple[str, dict[str, float]]] = []
    for item in (f"@{STACK}", "@transformer.h.0:1", "@transformer.h.0.attn:1"):
        reveal(page, item)
        pos = scroll_into_view(page, item)  # as a person would
        before = lens(page, "camera")  # where the camera was when they clicked
        click_and_settle(page, pos["x"], pos["y"])
        key = item[1:]
        assert key in [b["key"] for b in lens(page, "sceneGeometry()")["boxes"]]
        assert_in_view(page, key)
        page.screenshot(path=str(artifacts / f"camera_follows_{len(opened)}.png"))
        opened.append((key, before))
    # closing the last opened module (its title) puts the camera back where it was
    key, before = opened[-1]
    r = box_on_screen(page, key)
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    click_and_settle(page, canvas["x"] + r["x"] + 20, canvas["y"] + r["y"] + 8)
    assert key not in [b["key"] for b in lens(page, "sceneGeometry()")["boxes"]]
    after = lens(page, "camera")
    assert after == pytest.approx(before)
    assert page.errors == []


def test_search_for_a_module_brings_it_into_view_readably(page, gpt2_12):
    open_widget(page, gpt2_12, width=1340)
    page.fill("[data-testid=search]", "transformer.h.9.mlp")
    page.keyboard.press("Enter")
    wait_idle(page)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    geo = lens(page, "sceneGeometry()")
    cam = lens(page, "camera")
    w, h = canvas_size(page)
    rect = next(
        (i for i in geo["items"] if i["id"] == "@transformer.h.9.mlp:1"),
        next((b for b in geo["boxes"] if b["key"] == "transformer.h.9.mlp:1"), None),
    )
    assert rect is not None
    x0, y0 = rect["x"] * cam["scale"] + cam["tx"], rect["y"] * cam["scale"] + cam["ty"]
    assert 0 <= x0 <= w and 0 <= y0 <= h
    assert cam["scale"] >= FOLLOW_MIN_SCALE - 1e-6
    assert page.errors == []


class Loop(torch.nn.Module):
    """300 ops straight under the model: shown in chunks of consecutive ops."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(300):
            x = torch.tanh(x)
        return x


def test_opening_a_chunk_brings_it_into_view(page, artifacts) -> None:
    payload = build_payload(lw.trace(Loop(), (torch.randn(2, 4),), save=None))
    open_widget(page, payload, width=1340)
    chunks = [i for i in lens(page, "visibleIds") if i.startswith("@#")]
    assert len(chunks) >= 2, lens(page, "visibleIds")
    last = chunks[-1]
    click_item(page, last)
    wait_idle(page)
    key = last[1:]
    assert key in [b["key"] for b in lens(page, "sceneGeometry()")["boxes"]]
    page.screenshot(path=str(artifacts / "camera_follows_chunk.png"))
    assert_in_view(page, key)
    assert page.errors == []
