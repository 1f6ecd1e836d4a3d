"""What every host's test checks of a LensWidget drawn there (test_marimo.py, test_voila.py):
its styles applied, a click that plots, Python -> view, and a height that stays put.

Each takes the widget's root as a Playwright locator: locators reach into open shadow roots
(marimo renders each anywidget in one), `document.querySelector` does not.
"""

from __future__ import annotations

import json
import time
from typing import Any

ROOT = '[data-testid="lens-root"]'

# the notebooks' own cell, shared: the op to select from Python and every op's id, shown as text
# (a host's page has no kernel client for the test to ask)
TARGET_TESTID = "py-target"
OPS_TESTID = "py-ops"


def facts_html(widget: str) -> str:
    """Python for an HTML snippet naming the op Python selects (the last) and every op id."""
    return (
        f"_ops = [n['id'] for n in {widget}.graph['unrolled']['nodes'] if n['kind'] == 'op']\n"
        "_facts = (\n"
        f"    f'<pre data-testid=\"{TARGET_TESTID}\">{{_ops[-1]}}</pre>'\n"
        f"    f'<pre data-testid=\"{OPS_TESTID}\">{{json.dumps(_ops)}}</pre>'\n"
        ")\n"
    )


def page_facts(page: Any) -> tuple[str, list[str]]:
    target = page.get_by_test_id(TARGET_TESTID).first.inner_text().strip()
    ops = json.loads(page.get_by_test_id(OPS_TESTID).first.inner_text())
    return target, ops


def wait_laid_out(page: Any, root: Any, timeout: float = 120_000) -> None:
    """The widget's first layout is drawn."""
    root.wait_for(state="attached", timeout=timeout)
    root.scroll_into_view_if_needed()
    page.wait_for_function(
        "(r) => !!r.__lens && r.__lens.layoutStatus === 'idle' && r.__lens.visibleCount > 0",
        arg=root.element_handle(),
        timeout=60_000,
    )


def styles(root: Any) -> dict[str, Any]:
    """Computed styles that only the widget's own rules give (unstyled, the toolbar was a block
    of run-together text in the page's 16 px font)."""
    return root.evaluate(
        """(r) => {
          const tb = r.querySelector('.lens-toolbar');
          const btn = tb.querySelector('.lens-btn');
          return {
            toolbarDisplay: getComputedStyle(tb).display,
            fontSize: getComputedStyle(r).fontSize,
            buttonRadius: getComputedStyle(btn).borderTopLeftRadius,
            toolbarHeight: tb.getBoundingClientRect().height,
          };
        }"""
    )


def assert_styled(root: Any) -> None:
    got = styles(root)
    assert got["toolbarDisplay"] == "flex", got
    assert got["fontSize"] == "12px", got
    assert got["buttonRadius"] == "4px", got
    assert got["toolbarHeight"] < 100, got  # one or two lines of controls, not a column of them


def heights(root: Any) -> dict[str, float]:
    return root.evaluate(
        """(r) => ({
          canvas: r.querySelector('[data-testid="graph-canvas"]').getBoundingClientRect().height,
          root: r.getBoundingClientRect().height,
        })"""
    )


def assert_height_stays(page: Any, root: Any) -> dict[str, float]:
    """The canvas is as tall 5 s later (with no resize loop it never grows by itself)."""
    before = heights(root)
    page.wait_for_timeout(5000)
    after = heights(root)
    assert after == before, (before, after)
    assert 200 <= before["canvas"] <= 1100, before
    return before


def ops_on_screen(page: Any, root: Any, ops: list[str]) -> list[dict[str, Any]]:
    """Op nodes drawn inside both the canvas and the viewport, with their page positions."""
    return root.evaluate(
        """(r, ids) => {
          const dbg = r.__lens;
          const c = r.querySelector('[data-testid="graph-canvas"]').getBoundingClientRect();
          const shown = new Set(dbg.visibleIds);
          const out = [];
          for (const id of ids) {
            if (!shown.has(id)) continue;
            const p = dbg.nodeScreenPos(id);
            if (!p) continue;
            if (p.x > c.left + 6 && p.x < c.right - 6 && p.y > c.top + 6 && p.y < c.bottom - 6 &&
                p.y > 0 && p.y < window.innerHeight && p.x > 0 && p.x < window.innerWidth)
              out.push({ id, x: p.x, y: p.y });
          }
          return out;
        }""",
        ops,
    )


def zoom_in_until_minimap(page: Any, root: Any) -> None:
    """Wheel-zoom the graph (engaged by a click) until the minimap shows: from there the canvas
    grew without end in marimo while the widget was unstyled."""
    canvas = root.locator('[data-testid="graph-canvas"]').bounding_box()
    page.mouse.move(canvas["x"] + canvas["width"] / 3, canvas["y"] + canvas["height"] / 3)
    for _ in range(4):
        page.mouse.wheel(0, -400)
    page.wait_for_function("(r) => !!r.__lens.minimap", arg=root.element_handle(), timeout=15_000)


def inspector_id(root: Any) -> Any:
    return root.locator('[data-testid="inspector-id"]')


def click_op_and_see_plot(page: Any, root: Any, ops: list[str], avoid: str) -> str:
    """Click an op on screen (not `avoid`): the inspector opens on it with Plotly's plot."""
    candidates = [c for c in ops_on_screen(page, root, ops) if c["id"] != avoid]
    assert candidates, f"no op on screen among {ops}"
    target = candidates[-1]
    page.mouse.click(target["x"], target["y"])
    shown = inspector_id(root)
    shown.wait_for(timeout=15_000)
    assert shown.inner_text().strip() == target["id"]
    root.locator('[data-testid="plot-main"] .main-svg').first.wait_for(timeout=60_000)
    return target["id"]


def wait_inspecting(root: Any, op: str, timeout: float = 60) -> str:
    """Until the widget's inspector shows `op` (selected from Python); what it shows last."""
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        loc = inspector_id(root)
        if loc.count() and loc.is_visible():
            shown = loc.inner_text().strip()
            if shown == op:
                break
        time.sleep(0.25)
    return shown
