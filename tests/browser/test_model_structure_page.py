"""What a person meets first (#24): the model's own structure, not its plumbing. GPT-2's mask
builder is one closed box that opens on click and is found by search; ResNet stages of
different widths stay apart while the blocks inside each fold; outputs never vanish (Collapse
all, T5's first view); a GRU-cell loop opens rolled, input and output on screen, saying why.
"""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import click_item, kernel_log, lens, on_canvas, open_widget, wait_idle

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import STRUCTURE_MODELS  # noqa: E402

MASK = "@transformer.create_causal_mask():1"
WIDTH = 1340  # a 1400 px wide notebook's output area


def zoo_payload(name: str) -> dict[str, Any]:
    case = STRUCTURE_MODELS[name]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


@pytest.fixture(scope="module")
def gpt2_deep() -> dict[str, Any]:
    return zoo_payload("gpt2_deep")


def shown(page) -> list[str]:
    return lens(page, "visibleIds")


def test_gpt2_first_view_shows_the_model_and_boxes_the_mask_builder(page, gpt2_deep, artifacts):
    open_widget(page, gpt2_deep, width=WIDTH)
    page.screenshot(path=str(artifacts / "gpt2_deep_first_view.png"))
    items = shown(page)
    # input, embeddings, the 12 blocks folded, the final norm, the head, both outputs
    for item in (
        "input.0",
        "@transformer.wte:1",
        "@transformer.wpe:1",
        "@transformer.h.0×12",
        "@transformer.ln_f:1",
        "output.logits",
        "@output.cache",
    ):
        assert item in items, item
        assert on_canvas(page, item), item
    # the head: its box, or open on its one linear
    head = (
        "@lm_head:1" if "@lm_head:1" in items else next(i for i in items if i.startswith("linear"))
    )
    assert on_canvas(page, head)
    # the mask's dozens of helper ops are one closed box named after the function
    assert MASK in items
    assert lens(page, f"itemLines({MASK!r})")[0] == "create_causal_mask()"
    assert not [i for i in items if i.startswith(("le_", "and_", "new_ones_"))]
    assert len(items) <= 22
    # every label drawn at a zoom a person reads (the 620 px graph area holds it all)
    assert lens(page, "scale") >= 0.55
    assert page.errors == []


def test_the_mask_box_opens_on_click_and_is_found_by_search(page, gpt2_deep) -> None:
    open_widget(page, gpt2_deep, width=WIDTH)
    click_item(page, MASK)
    wait_idle(page)
    assert "transformer.create_causal_mask()" in lens(page, "expanded")
    items = shown(page)
    assert MASK not in items
    assert any(i.startswith("le_") for i in items)
    # closed again, search finds the function by name
    page.get_by_test_id("collapse-all").click()
    wait_idle(page)
    page.fill("[data-testid=search]", "create_causal")
    first = page.locator("[data-testid=search-result]").first
    assert "create_causal_mask()" in first.inner_text()
    assert page.errors == []


def test_collapse_all_keeps_every_output(page, gpt2_deep) -> None:
    open_widget(page, gpt2_deep, width=WIDTH)
    page.get_by_test_id("collapse-all").click()
    wait_idle(page)
    items = shown(page)
    assert "output.logits" in items and "@output.cache" in items
    assert on_canvas(page, "@output.cache")
    # and in the rolled view
    page.get_by_test_id("view-rolled").click()
    wait_idle(page)
    assert {"output.logits", "@output.cache"} <= set(shown(page))


def test_t5_first_view_shows_its_three_outputs(page) -> None:
    open_widget(page, zoo_payload("t5"), width=WIDTH)
    items = shown(page)
    for out in ("output.logits", "@output.cache", "output.encoder_last_hidden_state"):
        assert out in items and on_canvas(page, out), out


def test_resnet_stages_of_other_widths_do_not_fold_together(page) -> None:
    payload = zoo_payload("resnet_stages")
    open_widget(page, payload, width=WIDTH)
    stages = "resnet.encoder.stages"
    page.get_by_test_id("expand-all").click()
    wait_idle(page)
    expanded = lens(page, "expanded")
    # each stage is its own box; inside stages 1 and 2 the two last blocks fold, ×2
    assert not [k for k in expanded if k.startswith(f"{stages}.1×")]
    assert f"{stages}.1" in expanded and f"{stages}.2" in expanded
    assert f"{stages}.1.layers.1×2" in expanded and f"{stages}.2.layers.1×2" in expanded
    # rolled, a conv of stage 2 shows stage 2's 64 channels (folded with stage 1 it said 32)
    page.get_by_test_id("view-rolled").click()
    wait_idle(page)
    (conv,) = [
        n["id"]
        for n in payload["rolled"]["nodes"]
        if n["func"] == "conv2d" and n["module"] == f"{stages}.2.layers.0.layer.0.convolution"
    ]
    assert conv in shown(page)
    assert "2×64×2×2" in lens(page, f"itemLines({conv!r})")


def test_a_gru_cell_loop_opens_rolled_with_input_and_output_on_screen(page, artifacts) -> None:
    open_widget(page, zoo_payload("gru_cell_lm"), width=WIDTH)
    page.screenshot(path=str(artifacts / "gru_cell_lm_first_view.png"))
    assert lens(page, "view") == "rolled"
    assert on_canvas(page, "input.0") and on_canvas(page, "output")
    hint = page.get_by_test_id("view-hint")
    assert hint.is_visible()
    assert "recurrent" in hint.inner_text() and "gru_cell" in hint.inner_text()
    # the choice went to the kernel: w.view says rolled
    assert ["view", "rolled"] in [list(s) for s in kernel_log(page)["sets"]]
    # the way back: unrolled, and the hint goes
    page.get_by_test_id("view-hint-unrolled").click()
    wait_idle(page)
    assert lens(page, "view") == "unrolled"
    assert not hint.is_visible()
    assert page.errors == []


def test_a_recurrent_model_that_fits_unrolled_stays_unrolled(page) -> None:
    case = STRUCTURE_MODELS["gru_cell_lm"]()
    ids = case.args[0][:, :2]  # two steps fit on one screen
    with torch.no_grad():
        log = lw.trace(case.model, (ids,), save=None)
    assert log.structure == "recurrent"
    open_widget(page, build_payload(log), width=WIDTH)
    assert lens(page, "view") == "unrolled"
    assert not page.get_by_test_id("view-hint").is_visible()
