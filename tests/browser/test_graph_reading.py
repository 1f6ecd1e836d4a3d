"""What a person sees of a real model's graph: GPT-2 with 24 blocks opens whole and readable,
its blocks folded (×24), KV-cache outputs gathered; expanding and switching views keep the
place; no edge runs through a box it does not connect (GPT-2, ResNet, a loop); the overview
minimap pans the view.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_payload
from lens_harness import (
    click_item,
    drag_down,
    item_pos,
    kernel_log,
    lens,
    on_canvas,
    open_widget,
    wait_idle,
)
from scene_checks import edge_crossings

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402

STACK = "@transformer.h.0×24"


@pytest.fixture(scope="module")
def gpt2_24() -> dict[str, Any]:
    """GPT-2 with 24 blocks of width 64 (random weights), folding into a ×24 stack."""
    return gpt2_payload(24)


def zoo_payload(name: str) -> dict[str, Any]:
    case = TEST_MODELS[name]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def scene(page) -> dict[str, Any]:
    return lens(page, "sceneGeometry()")


def ids_of(page) -> list[str]:
    return lens(page, "visibleIds")


def test_gpt2_24_opens_whole_readable_with_the_blocks_folded(page, gpt2_24, artifacts) -> None:
    open_widget(page, gpt2_24)
    page.screenshot(path=str(artifacts / "gpt2_24_first_view.png"))
    # no Fit pressed: the first paint shows the whole top level at a legible zoom
    assert lens(page, "scale") >= 0.5
    assert on_canvas(page, "input.0") and on_canvas(page, "output.logits")
    shown = ids_of(page)
    assert all(on_canvas(page, i) for i in shown)
    # embeddings, the folded stack, the final norm and the head are there
    for item in ("@transformer.wte:1", "@transformer.wpe:1", STACK, "@transformer.ln_f:1"):
        assert item in shown, item
    assert any(i == "@lm_head:1" or i.startswith("linear") for i in shown)
    assert lens(page, f"itemLines({STACK!r})")[0] == "GPT2Block ×24"
    # 48 KV-cache tensors are one node beside the blocks, not a row of outputs (the
    # cache field is `past_key_values`, or `cache` from transformers 5.x on)
    nodes = gpt2_24["unrolled"]["nodes"]
    (cache,) = {n["id"].split(".")[1] for n in nodes if n["id"].endswith(".keys")}
    assert not [i for i in shown if i.startswith(f"output.{cache}.")]
    assert lens(page, f"itemLines('@output.{cache}')")[0] == f"{cache} ×48"
    assert len(shown) < 30
    # the expansion the view settled on went to the kernel
    sets = [v for k, v in kernel_log(page)["sets"] if k == "expanded"]
    assert sets and sorted(sets[-1]) == lens(page, "expanded")
    assert "transformer" in lens(page, "expanded")
    assert page.errors == []


def test_opening_the_stack_shows_the_blocks(page, gpt2_24) -> None:
    open_widget(page, gpt2_24)
    click_item(page, STACK)
    wait_idle(page)
    shown = ids_of(page)
    blocks = [i for i in shown if i.startswith("@transformer.h.")]
    assert blocks == [f"@transformer.h.{k}:1" for k in range(24)]
    assert "transformer.h.0×24" in lens(page, "expanded")
    assert lens(page, "itemLines('@transformer.h.7:1')")[0] == "GPT2Block"
    click_item(page, "@transformer.h.7:1")
    wait_idle(page)
    nodes = gpt2_24["unrolled"]["nodes"]
    inside = [n["id"] for n in nodes if n["groups"][1:2] == ["transformer.h.7:1"]]
    assert any(i in ids_of(page) for i in inside)
    assert edge_crossings(scene(page)) == []
    assert page.errors == []


def test_a_view_switch_keeps_the_selected_op_in_place(page, gpt2_24, artifacts) -> None:
    open_widget(page, gpt2_24)
    sdpa = next(
        n["id"]
        for n in gpt2_24["unrolled"]["nodes"]
        if n["func"] == "scaled_dot_product_attention" and n["module"] == "transformer.h.3.attn"
    )
    click_item(page, sdpa)
    wait_idle(page)
    assert lens(page, "selected") == sdpa
    before, scale = item_pos(page, sdpa), lens(page, "scale")
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    layer = lens(page, "selected")
    assert sdpa in next(n for n in gpt2_24["rolled"]["nodes"] if n["id"] == layer)["passes"]
    after = item_pos(page, layer)
    assert after is not None and on_canvas(page, layer)
    assert abs(after["x"] - before["x"]) < 2 and abs(after["y"] - before["y"]) < 2
    assert lens(page, "scale") == pytest.approx(scale)
    # the rolled view shows the 24 blocks as one, its ops with 24 passes
    assert lens(page, f"itemLines({layer!r})")[0] == "scaled_dot_product_attention ×24"
    header = page.evaluate("() => window.__el.__lens.groupHeaderPos('transformer.h.0')")
    assert header is not None
    page.screenshot(path=str(artifacts / "gpt2_24_rolled.png"))
    page.click("[data-testid=view-unrolled]")
    wait_idle(page)
    back = lens(page, "selected")
    assert back in next(n for n in gpt2_24["rolled"]["nodes"] if n["id"] == layer)["passes"]
    assert on_canvas(page, back)
    assert page.errors == []


@pytest.mark.parametrize("model", ["gpt2_24", "resnet", "looped"])
@pytest.mark.parametrize("view", ["unrolled", "rolled"])
def test_no_edge_crosses_a_box_it_does_not_connect(page, gpt2_24, model, view) -> None:
    payload = gpt2_24 if model == "gpt2_24" else zoo_payload(model)
    open_widget(page, payload, traits={"view": view})
    assert len(scene(page)["edges"]) > 0
    assert edge_crossings(scene(page)) == []
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    everything = scene(page)
    hidden = ("param", "buffer", "const")
    n_shown = sum(1 for n in payload[view]["nodes"] if n["kind"] not in hidden)
    assert len(everything["items"]) == n_shown
    assert edge_crossings(everything) == []
    assert page.errors == []


def test_the_minimap_shows_the_view_and_drags_it(page, gpt2_24, artifacts) -> None:
    open_widget(page, gpt2_24)
    assert lens(page, "minimap") is None  # the whole graph is on screen
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    mini = lens(page, "minimap")
    assert mini is not None and mini["h"] > 40
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert canvas["x"] < mini["x"] and mini["x"] + mini["w"] <= canvas["x"] + canvas["width"]
    page.screenshot(path=str(artifacts / "gpt2_24_minimap.png"))
    # it names the first-level modules, and blocks inside them where there is room (#24 item 5)
    names = page.get_attribute("[data-testid=minimap]", "aria-label") or ""
    assert names.startswith("Overview: ") and "GPT2Model" in names, names
    assert "GPT2Block" in names, names
    top = lens(page, "camera")
    # drag from the top of the overview (where the view is) to its middle
    x = mini["x"] + mini["w"] / 2
    drag_down(page, x, mini["y"] + 3, mini["h"] / 2 - 3, steps=4)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    moved = lens(page, "camera")
    assert moved["scale"] == top["scale"]
    graph_h = max(i["y"] + i["h"] for i in scene(page)["items"])
    # half the overview's height is about half the graph
    assert top["ty"] - moved["ty"] > 0.3 * graph_h * moved["scale"]
    assert page.errors == []
