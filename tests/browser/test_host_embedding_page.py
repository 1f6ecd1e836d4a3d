"""The widget drawn as hosts other than Jupyter hand it `el` (plain page harness, the tiny GPT-2):
inside a shadow root (marimo), attached only after render (Voila), and with its style element
taken away (a host that drops it). Its rules travel inside `el`, never only in the page's
<head>; and whatever styles apply, the canvas never sizes the box it is sized from.
"""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import open_widget, wait_idle

torch = pytest.importorskip("torch")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402

STYLES = """() => {
  const r = window.__el.querySelector('[data-testid="lens-root"]');
  const tb = r.querySelector('.lens-toolbar');
  const headStyles = [...document.head.querySelectorAll('style')];
  return { display: getComputedStyle(tb).display, font: getComputedStyle(r).fontSize,
           inShadow: r.getRootNode() instanceof ShadowRoot,
           headRules: headStyles.some((s) => s.textContent.includes('.lens-toolbar')) };
}"""

CANVAS_HEIGHT = """() => window.__el.querySelector('[data-testid="graph-canvas"]')
  .getBoundingClientRect().height"""


@pytest.fixture(scope="module")
def gpt2() -> dict[str, Any]:
    case = TEST_MODELS["gpt2"]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def test_in_a_shadow_root_the_widget_is_styled(page: Any, gpt2: dict[str, Any]) -> None:
    open_widget(page, gpt2, host="shadow")
    got = page.evaluate(STYLES)
    # the page's <head> holds none of its rules: they are in the shadow root, with `el`
    assert got == {"display": "flex", "font": "12px", "inShadow": True, "headRules": False}
    assert page.errors == []


def test_attached_after_render_the_widget_is_styled(page: Any, gpt2: dict[str, Any]) -> None:
    open_widget(page, gpt2, host="late", wait=False)
    page.wait_for_function("() => window.__el?.isConnected")
    wait_idle(page)
    assert page.evaluate("() => window.__renderedDetached") is True  # as Voila does it
    got = page.evaluate(STYLES)
    assert got["display"] == "flex" and got["font"] == "12px", got
    assert page.evaluate(CANVAS_HEIGHT) > 200
    assert page.errors == []


def test_without_its_rules_the_canvas_does_not_grow(page: Any, gpt2: dict[str, Any]) -> None:
    # Unstyled, the canvas used to lie in its box's flow: each resize made the box taller by a
    # line's descent, and the box's new height resized the canvas again, without end.
    open_widget(page, gpt2, host="stripped")
    assert page.evaluate(STYLES)["display"] == "block"  # the toolbar's rules are gone
    before = page.evaluate(CANVAS_HEIGHT)
    page.wait_for_timeout(3000)
    assert page.evaluate(CANVAS_HEIGHT) == before
    assert page.errors == []
