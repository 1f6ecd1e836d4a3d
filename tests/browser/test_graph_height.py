"""Room to read (issue 24, item 12): the graph's height comes from the `height` trait and a
handle under the graph drags it; the dragged height is written back to the trait, so it is
kept with the widget. Plain page harness, a real traced model.
"""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import drag_down, kernel_log, open_widget, wait_idle

torch = pytest.importorskip("torch")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402


@pytest.fixture(scope="module")
def resnet() -> dict[str, Any]:
    case = TEST_MODELS["resnet"]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def canvas_height(page) -> float:
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert box is not None
    return box["height"]


def height_sets(page) -> list[int]:
    return [v for k, v in kernel_log(page)["sets"] if k == "height"]


def test_the_height_trait_sets_the_graph_height(page, resnet) -> None:
    open_widget(page, resnet, traits={"height": 900})
    tall = canvas_height(page)
    page.evaluate("() => window.__fake.kernelSet('height', 400)")  # the kernel changes it
    wait_idle(page)
    short = canvas_height(page)
    assert tall - short == pytest.approx(500, abs=2)
    assert page.errors == []


def test_the_handle_drags_the_height_and_writes_the_trait(page, resnet) -> None:
    open_widget(page, resnet)
    before = canvas_height(page)
    handle = page.locator("[data-testid=resize-graph]").bounding_box()
    assert handle is not None and handle["height"] >= 5
    x, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    drag_down(page, x, y, 200, steps=5)
    wait_idle(page)
    after = canvas_height(page)
    assert after - before == pytest.approx(200, abs=3)
    assert height_sets(page) == [620 + 200]  # written once, when let go
    # the canvas is drawn at its new size, not stretched
    px = page.evaluate(
        "() => document.querySelector('[data-testid=graph-canvas]').height / devicePixelRatio"
    )
    assert px == pytest.approx(after, abs=1)
    # the keyboard moves it too
    page.locator("[data-testid=resize-graph]").focus()
    page.keyboard.press("ArrowUp")
    assert height_sets(page)[-1] == 820 - 40
    assert page.errors == []
