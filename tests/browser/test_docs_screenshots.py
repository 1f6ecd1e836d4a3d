"""The pictures of docs/widget.md, taken from a real traced GPT-2 behind the real request handler
(plain page, fixtures/lens_harness.py), each after asserting what it shows: the first view with
the blocks folded, a block expanded, the inspector with a plot, the rolled view.

The PNGs go to the test artifacts; with LENS_UPDATE_DOC_IMAGES=1 they also replace the ones in
docs/img/ (commit them when the widget's look changes on purpose).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from lens_harness import click_item, lens, open_widget, reveal, wait_idle, widget_kernel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from lens_widget.widget import LensWidget  # noqa: E402

DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
WIDTH = 960  # narrow pictures stay small files


@pytest.fixture(scope="module")
def gpt2() -> LensWidget:
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 64, (1, 9), generator=torch.Generator().manual_seed(1))
    return LensWidget(transformers.GPT2LMHeadModel(config).eval(), (ids,))


def shoot(page, artifacts: Path, name: str) -> None:
    path = artifacts / f"docs_{name}.png"
    box = page.evaluate(
        "() => { const r = window.__el.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; }"
    )
    page.screenshot(path=str(path), clip=box)  # the widget only, not the empty page below
    if os.environ.get("LENS_UPDATE_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(exist_ok=True)
        shutil.copyfile(path, DOC_IMAGES / f"{name}.png")


def test_the_pictures_of_the_widget_doc(page, gpt2, artifacts) -> None:
    open_widget(page, gpt2.graph, python_kernel=widget_kernel(gpt2), width=WIDTH)
    # first view: the two blocks are one folded box, closed
    expanded = lens(page, "expanded")
    assert "transformer.h.0" not in expanded and "transformer.h.0.attn" not in expanded
    first = lens(page, "visibleIds")
    assert not any(i.startswith("scaled_dot_product_attention") for i in first)
    assert "@transformer.h.0×2" in first, first  # one closed box: GPT2Block ×2
    shoot(page, artifacts, "first-view")

    # a block opened down to its attention: the op inside becomes visible
    sdpa = next(o.label for o in gpt2.model_log.ops if o.func == "scaled_dot_product_attention")
    reveal(page, sdpa)
    wait_idle(page)
    assert "transformer.h.0.attn" in lens(page, "expanded")
    assert lens(page, "selected") == ""
    assert sdpa in lens(page, "visibleIds")
    assert len(lens(page, "visibleIds")) > len(first)
    shoot(page, artifacts, "expanded")

    # the inspector plots the clicked op's attention weights and activation, from the kernel
    click_item(page, sdpa)
    assert lens(page, "selected") == sdpa
    page.locator("[data-testid=attention-plot].js-plotly-plot").wait_for()
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    panel = page.inner_text("[data-testid=inspector]")
    assert sdpa in panel
    shoot(page, artifacts, "inspector")

    # rolled: fewer nodes, the selection kept on its layer
    unrolled = lens(page, "visibleIds")
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    assert lens(page, "view") == "rolled"
    assert len(lens(page, "visibleIds")) < len(unrolled)
    assert lens(page, "selected") == sdpa.split(":")[0]
    assert "pass 1 of 2" in page.inner_text("[data-testid=inspector]")  # h.0 and h.1 folded
    shoot(page, artifacts, "rolled")
    assert page.errors == []


def test_the_picture_of_the_monitor_view(page, artifacts) -> None:
    import lens_widget as lw
    from model_zoo.monitored import PoisonNet, train

    model = PoisonNet(poison_at=3)
    mon = lw.Monitor(model, keep="nonfinite")
    w = LensWidget.from_monitor(mon)
    train(model, mon, 6)
    traits = {"monitor": w.monitor, "step": 3}
    open_widget(page, w.graph, traits=traits, python_kernel=widget_kernel(w), width=WIDTH)
    page.select_option("[data-testid=monitor-stat]", "nan")
    shown = "document.querySelector('[data-testid=monitor]').dataset.shown"
    page.wait_for_function(f"() => {shown} === '3|activation|nan|value'")
    first = page.locator("[data-testid=monitor-ranked] li").first
    assert (first.get_attribute("data-id") or "").startswith("log_")
    first.locator("button").click()
    page.locator("[data-testid=monitor-kept-plot] .main-svg").first.wait_for(timeout=20000)
    page.set_viewport_size({"width": WIDTH + 60, "height": 1500})  # the plots below the graph
    page.locator("[data-testid=monitor-series] .main-svg").first.wait_for()
    wait_idle(page)
    shoot(page, artifacts, "monitor")
    if os.environ.get("LENS_UPDATE_DOC_IMAGES") == "1":  # a tall picture: 128 colors keep it small
        from PIL import Image

        image = Image.open(DOC_IMAGES / "monitor.png").convert("RGB")
        image.quantize(colors=128).save(DOC_IMAGES / "monitor.png", optimize=True)
