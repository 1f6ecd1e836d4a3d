"""No box is cut at the canvas's side after the widget moves the camera (#36 item 7): on a tiny
diffusers UNet, after a click that opens a module (its inspector narrowing the graph), a double
click that goes down, a search jump to an op and a click on an op, no title on screen crosses
the canvas's left or right edge (a box read "etMidBlock2DCrossAttn" where it stood across the
left edge): each is whole on screen or wholly off it (render/wholeTitles.ts)."""

from __future__ import annotations

import pytest
from lens_harness import item_pos, lens, open_widget, scroll_into_view, wait_idle, widget_kernel

pytest.importorskip("diffusers")

from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo.diffusion import unet2d_condition  # noqa: E402

# every drawn title (an item's text is centred across it; an open box's title band) on screen
# vertically that crosses the canvas's left or right edge, read from the drawn scene
CUT = """() => { const l = window.__el.__lens; const g = l.sceneGeometry(); const cam = l.camera;
  const c = document.querySelector('[data-testid=graph-canvas]').getBoundingClientRect();
  const W = c.width, H = c.height, out = [];
  const bands = g.boxes.filter((b) => b.title && b.title.w > 0);
  const titles = [...g.items.map((i) => [i.id, i]),
                  ...bands.map((b) => ['title ' + b.key, b.title])];
  for (const [id, r] of titles) {
    const x0 = r.x * cam.scale + cam.tx, x1 = x0 + r.w * cam.scale;
    const y0 = r.y * cam.scale + cam.ty, y1 = y0 + r.h * cam.scale;
    if (y1 <= 0 || y0 >= H) continue;
    if ((x0 < -1 && x1 > 1) || (x0 < W - 1 && x1 > W + 1))
      out.push(`${id} at ${Math.round(x0)}..${Math.round(x1)} of ${W}`);
  }
  return out; }"""


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    case = unet2d_condition()
    return LensWidget(case.model, case.args, case.kwargs)


def settled(page) -> None:
    wait_idle(page)
    page.wait_for_timeout(200)  # a resize observer's size, and a layout it starts
    wait_idle(page)


def assert_whole(page, after: str) -> None:
    cut = page.evaluate(CUT)
    assert cut == [], f"after {after}, titles cut at the canvas's edge: {cut}"


@pytest.mark.parametrize("width", [1340, 1000])
def test_no_title_is_cut_after_the_camera_follows_a_click(
    page, widget, artifacts, width: int
) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=width)
    assert_whole(page, "the first view")
    # a click on the mid block: it opens, its inspector narrows the graph beside it
    pos = item_pos(page, "@mid_block:1")
    assert pos is not None
    page.mouse.click(pos["x"], pos["y"])
    settled(page)
    assert page.locator("[data-testid=inspector]").is_visible()
    assert "mid_block" in lens(page, "expanded")
    assert_whole(page, "opening mid_block with its inspector")
    page.screenshot(path=str(artifacts / f"whole_titles_{width}.png"))

    # a double click on the first down block goes down to its first block's contents
    pos = scroll_into_view(page, "@down_blocks.0:1")
    page.mouse.dblclick(pos["x"], pos["y"])
    settled(page)
    assert "down_blocks.0" in lens(page, "expanded")
    assert_whole(page, "a double click on down_blocks.0")

    # a search jump to the attention op: the camera centres on it
    ops = widget.model_log.ops
    sdpa = next(op.label for op in ops if op.func == "scaled_dot_product_attention")
    page.fill("[data-testid=search]", sdpa)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    settled(page)
    assert lens(page, "selected") == sdpa
    assert_whole(page, f"a jump to {sdpa}")

    # a click on an op beside it: its inspector shows it
    conv = next(op.label for op in ops if op.func == "conv2d")
    pos = scroll_into_view(page, lens(page, f"visibleItemFor({conv!r})"))
    page.mouse.click(pos["x"], pos["y"])
    settled(page)
    assert_whole(page, f"a click on {conv}")
    assert page.errors == []
