"""Real tier, issue 24 (items 2, 5, 11, 12) in a 1400x1000 JupyterLab, on GPT-2 with 12
blocks and an attention mask: opening the ×12 stack, a block and its attention brings each
into view at a readable zoom and closing returns the camera; Fit far out names the modules
at a readable size; hovering a module shows its whole address; `height=` sets the graph's
height and the drag handle changes it, written back to the kernel's trait.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from lens_harness import drag_down
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    Kernel,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

NOTEBOOK = "camera.ipynb"
CELL = """\
import torch, transformers
from lens_widget import LensWidget

torch.manual_seed(0)
config = transformers.GPT2Config(n_layer=12, n_embd=64, n_head=4, vocab_size=500,
                                 n_positions=64, bos_token_id=1, eos_token_id=2)
ids = torch.randint(0, 500, (1, 16), generator=torch.Generator().manual_seed(1))
model = transformers.GPT2LMHeadModel(config).eval()
w = LensWidget(model, ids, {"attention_mask": torch.ones_like(ids)}, height=760)
w"""
FOLLOW_MIN_SCALE = 0.62  # js/src/render/camera.ts
OVERVIEW_PX = 12  # js/src/render/zoomLevels.ts


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_with_notebook(tmp_path_factory.mktemp("lab_camera"), NOTEBOOK, [CELL]) as server:
        yield server


def open_widget(lab: Lab, page: Any) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    page.evaluate(
        """async () => { const app = window.jupyterapp;
          app.shell.currentWidget.content.activeCellIndex = 0;
          await app.commands.execute('notebook:run-cell'); }"""
    )
    wait_for_widget(page)


def lens(page: Any, expr: str) -> Any:
    return page.evaluate(f"() => document.querySelector('{ROOT}').__lens.{expr}")


def wait_idle(page: Any) -> None:
    page.wait_for_function(
        f"() => document.querySelector('{ROOT}').__lens.layoutStatus === 'idle'", timeout=30_000
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def canvas(page: Any) -> dict[str, float]:
    c = page.locator(f'{ROOT} [data-testid="graph-canvas"]').first
    c.scroll_into_view_if_needed()
    box = c.bounding_box()
    assert box is not None
    return box


def screen_rect(page: Any, rect: dict[str, float]) -> dict[str, float]:
    """A graph rect in canvas pixels."""
    cam = lens(page, "camera")
    s = cam["scale"]
    x, y = rect["x"] * s + cam["tx"], rect["y"] * s + cam["ty"]
    return {"x": x, "y": y, "w": rect["w"] * s, "h": rect["h"] * s}


def open_box(page: Any, key: str) -> dict[str, float]:
    """Click the collapsed module `key` (brought into view first, as a person scrolls to it)."""
    box = canvas(page)
    geo = lens(page, "sceneGeometry()")
    (item,) = [i for i in geo["items"] if i["id"] == "@" + key]
    r = screen_rect(page, item)
    if not (r["y"] >= 0 and r["y"] + r["h"] <= box["height"]):
        # drag it into the middle, as a person would
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        dy = box["height"] / 2 - (r["y"] + r["h"] / 2)
        drag_down(page, cx, cy, dy)
        r = screen_rect(page, item)
    page.mouse.click(box["x"] + r["x"] + r["w"] / 2, box["y"] + r["y"] + r["h"] / 2)
    wait_idle(page)
    (opened,) = [b for b in lens(page, "sceneGeometry()")["boxes"] if b["key"] == key]
    return screen_rect(page, opened)


def test_the_camera_follows_what_opens_and_closing_returns(lab: Lab, page: Any, artifacts: Path):
    open_widget(lab, page)
    # the model's name is not cut at 1400 px (the toolbar's labels get shorter first)
    cut = page.evaluate(
        f"""() => {{ const t = document.querySelector('{ROOT} [data-testid=model-title]');
            return [...t.children].some((c) => c.scrollWidth > c.clientWidth + 0.5); }}"""
    )
    assert cut is False
    assert page.text_content(f"{ROOT} [data-testid=model-title]").startswith("GPT2LMHeadModel")
    for key in ("transformer.h.0×12", "transformer.h.0:1", "transformer.h.0.attn:1"):
        before = lens(page, "camera")
        r = open_box(page, key)
        box = canvas(page)
        page.screenshot(path=str(artifacts / f"jupyterlab_camera_{key.split('.')[-1]}.png"))
        assert lens(page, "scale") >= FOLLOW_MIN_SCALE - 1e-6
        assert r["x"] >= 0 and r["x"] + r["w"] <= box["width"], (key, r, box)
        assert 0 <= r["y"] < box["height"] - 40, (key, r, box)
        if r["y"] + r["h"] > box["height"]:  # taller than the canvas: its top at the top
            assert r["y"] < 40 and lens(page, "scale") == pytest.approx(FOLLOW_MIN_SCALE)
    # close the attention box by its title: the camera is where it was before it opened
    box = canvas(page)
    page.mouse.click(box["x"] + r["x"] + 20, box["y"] + r["y"] + 8)
    wait_idle(page)
    assert lens(page, "camera") == pytest.approx(before)
    assert "transformer.h.0.attn:1" not in lens(page, "expanded")
    # hovering a folded block shows its whole address and what it holds
    geo = lens(page, "sceneGeometry()")
    (blk,) = [i for i in geo["items"] if i["id"] == "@transformer.h.1:1"]
    b = screen_rect(page, blk)
    page.mouse.move(box["x"] + b["x"] + b["w"] / 2, box["y"] + b["y"] + b["h"] / 2)
    title = page.get_attribute(f'{ROOT} [data-testid="graph-canvas"]', "title")
    assert title.startswith("GPT2Block transformer.h.1 · ") and "ops" in title


def test_fit_names_modules_readably_and_the_height_is_kept(lab: Lab, page: Any, artifacts: Path):
    open_widget(lab, page)
    kernel = Kernel(lab.connection_file())
    try:
        # height=760: the graph area (canvas and its footer strip) is 760 px tall
        main = page.locator(f"{ROOT} .lens-main").first.bounding_box()
        assert main["height"] == pytest.approx(760, abs=1)
        open_box(page, "transformer.h.0×12")
        page.locator(f'{ROOT} [data-testid="fit"]').click()
        wait_idle(page)
        assert lens(page, "scale") < 0.5
        page.screenshot(path=str(artifacts / "jupyterlab_fit_overview.png"))
        texts = [x["text"] for x in lens(page, "overviewLabels")]
        assert sum(t.startswith("GPT2Block h.") for t in texts) >= 6, texts
        assert lens(page, "minTextPx") == OVERVIEW_PX
        # drag the handle 120 px down: the canvas grows, the kernel's trait follows
        before = canvas(page)["height"]
        handle = page.locator(f'{ROOT} [data-testid="resize-graph"]').first
        handle.scroll_into_view_if_needed()
        hb = handle.bounding_box()
        x, y = hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2
        drag_down(page, x, y, 120, steps=4)
        wait_idle(page)
        assert canvas(page)["height"] - before == pytest.approx(120, abs=2)
        deadline = 0
        while kernel.run("print(w.height)").strip() != "880" and deadline < 20:
            page.wait_for_timeout(250)
            deadline += 1
        assert kernel.run("print(w.height)").strip() == "880"
        # and the kernel sets it back
        kernel.run("w.height = 500")
        page.wait_for_function(
            f"() => document.querySelector('{ROOT} .lens-main').getBoundingClientRect().height"
            " < 510",
            timeout=10_000,
        )
    finally:
        kernel.close()
