"""A click on a module opens its inspector beside the graph (#24 item 14), and the graph that
narrows for it is not laid out again: box positions do not depend on the canvas's width (tall
chains wrap by the widget's width, app.ts). The clicked box stays under the pointer, closing
the inspector widens the graph with no layout either, and a click whose layout is cached
narrows at once with what it closed in view. GPT-2 with 12 blocks (masked), plain page harness.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_12_payload
from lens_harness import lens, on_canvas, open_widget, scroll_into_view, wait_idle

pytest.importorskip("transformers")

STACK = "@transformer.h.0×12"
WIDTH = 1340


@pytest.fixture(scope="module")
def gpt2_12() -> dict[str, Any]:
    return gpt2_12_payload(save=None)


def canvas_width(page) -> float:
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert box is not None
    return box["width"]


def settle(page) -> None:
    """The worker idle and a few frames drawn: time for a resize observer, and a layout it
    would start, to show in the layout count."""
    wait_idle(page)
    for _ in range(3):
        page.evaluate("() => new Promise(r => setTimeout(() => requestAnimationFrame(r), 20))")
    wait_idle(page)


def canvas_top(page) -> float:
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert box is not None
    return box["y"]


def screen_top(page, item: str) -> float:
    """The page y of an item's top edge."""
    geo = lens(page, "sceneGeometry()")
    (it,) = [i for i in geo["items"] if i["id"] == item]
    cam = lens(page, "camera")
    return canvas_top(page) + it["y"] * cam["scale"] + cam["ty"]


def click_and_count(page, x: float, y: float) -> int:
    """Clicks, waits until the click's layout is placed and all has settled; layouts applied."""
    laid = lens(page, "layoutCount")
    page.mouse.click(x, y)
    page.wait_for_function("(n) => window.__el.__lens.layoutCount > n", arg=laid)
    settle(page)
    return lens(page, "layoutCount") - laid


def test_the_inspector_narrows_the_graph_without_laying_it_out_again(page, gpt2_12) -> None:
    open_widget(page, gpt2_12, width=WIDTH)
    inspector = page.locator("[data-testid=inspector]")
    assert inspector.is_hidden()
    wide = canvas_width(page)
    pos = scroll_into_view(page, STACK)
    top = screen_top(page, STACK)

    # the stack opens and its inspector with it: one layout, the one the click asked for
    assert click_and_count(page, pos["x"], pos["y"]) == 1
    assert inspector.is_visible()
    narrow = canvas_width(page)
    assert WIDTH / 2 <= narrow < wide - 100  # narrowed, the graph keeping half the widget
    # the renderer took the narrower size (not only the page's box around the canvas)
    assert page.evaluate(
        "() => document.querySelector('[data-testid=graph-canvas]').width"
    ) == pytest.approx(narrow, abs=1)
    key = STACK[1:]
    header = page.evaluate("(k) => window.__el.__lens.groupHeaderPos(k)", key)
    assert header is not None
    # what was clicked stays under the pointer: the open box's title where the closed box's
    # top was (the title's position is 10 px into the box), or above it where the camera then
    # moved up to show more of the tall stack (reveal)
    assert header["x"] == pytest.approx(pos["x"], abs=2), (header, pos)
    assert canvas_top(page) < header["y"] <= top + 12, (header, top)

    # closing the inspector gives the graph its width back, laying nothing out
    laid = lens(page, "layoutCount")
    page.click("[data-testid=inspector-close]")
    settle(page)
    assert inspector.is_hidden()
    assert canvas_width(page) == pytest.approx(wide, abs=1)
    assert lens(page, "layoutCount") == laid

    # its title closes it again: that layout is cached (the first view's), placed at once,
    # and the inspector that opens with it narrows the graph with the closed stack in view
    header = page.evaluate("(k) => window.__el.__lens.groupHeaderPos(k)", key)
    assert click_and_count(page, header["x"], header["y"]) == 1
    assert key.rsplit(":", 1)[0] not in lens(page, "expanded")
    assert inspector.is_visible()
    assert canvas_width(page) == pytest.approx(narrow, abs=1)
    assert lens(page, "markedItem") == STACK and on_canvas(page, STACK)
    # back where it was when it opened (the camera returns), the graph narrowing around it
    # rather than moving it by half the inspector's width
    back = page.evaluate("(id) => window.__el.__lens.nodeScreenPos(id)", STACK)
    assert abs(back["x"] - pos["x"]) < 60, (back, pos)
    assert page.errors == []
