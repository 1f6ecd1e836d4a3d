"""Room for the graph (#36 item 7): with the inspector open (the graph narrowed beside it) and
the view dragged about a wav2vec2 opened all the way, the overview in the corner never covers a
node, a closed module or the inspected op: it moves to a free corner, shrinks, or hides (it
sat in the bottom-right corner on the router's div_ and a detector's output)."""

from __future__ import annotations

import pytest
from lens_harness import item_pos, lens, open_widget, wait_idle, widget_kernel

pytest.importorskip("transformers")

from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo.audio import wav2vec2  # noqa: E402

FRAME = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
COVERED = """() => { const l = window.__el.__lens; const m = l.minimap; if (!m) return null;
  const c = document.querySelector('[data-testid=graph-canvas]').getBoundingClientRect();
  const cam = l.camera; const g = l.sceneGeometry(); const out = [];
  for (const it of g.items) {
    const x = c.left + it.x * cam.scale + cam.tx, y = c.top + it.y * cam.scale + cam.ty;
    const w = it.w * cam.scale, h = it.h * cam.scale;
    if (x + w < c.left || y + h < c.top || x > c.right || y > c.bottom) continue;
    if (x < m.x + m.w && m.x < x + w && y < m.y + m.h && m.y < y + h) out.push(it.id);
  }
  return out; }"""


def test_the_overview_never_covers_a_node_as_the_view_moves(page, artifacts) -> None:
    case = wav2vec2()
    widget = LensWidget(case.model, case.args)
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=1000)
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    ops = widget.model_log.ops
    sdpa = next(op.label for op in ops if op.func == "scaled_dot_product_attention")
    page.fill("[data-testid=search]", sdpa)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == sdpa
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert box is not None
    seen = 0
    # bring ops into the bottom-right corner, where the overview sat, and into the others
    ops = [op.label for op in widget.model_log.ops if op.func in ("linear", "reshape", "gelu")]
    corners = [(box["width"] - 70, box["height"] - 40), (70, box["height"] - 40), (70, 40)]
    for i, op in enumerate([sdpa, *ops[:5]]):
        tx, ty = corners[i % len(corners)]
        pos = item_pos(page, op)
        if pos is None:
            continue
        dx, dy = box["x"] + tx - pos["x"], box["y"] + ty - pos["y"]
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] / 2 + dx / 2, box["y"] + box["height"] / 2 + dy / 2)
        page.mouse.move(box["x"] + box["width"] / 2 + dx, box["y"] + box["height"] / 2 + dy)
        page.mouse.up()
        page.evaluate(FRAME)
        covered = page.evaluate(COVERED)
        if covered is not None:
            seen += 1
            assert covered == [], f"with {op} in a corner the overview covers {covered}"
    assert seen >= 3  # it was shown, moved about, not simply hidden
    page.screenshot(path=str(artifacts / "minimap_room.png"))
    assert page.errors == []
