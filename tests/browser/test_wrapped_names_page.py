"""A PEFT LoRA Llama on a plain page keeps its names (issue 36, point 9): a box shows
`model.layers.0.self_attn` (its address without PEFT's `base_model.model.`), never a middle
cut that loses `layers.0`; the LoRA-wrapped `q_proj` reads "lora.Linear" beside the plain
`k_proj`'s "Linear". Checked on the text the canvas draws (its SVG export)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch
from lens_harness import lens, open_widget, scroll_into_view, wait_idle

import lens_widget as lw
from lens_widget.widget.payload import build_payload
from model_zoo.wrapped import lora_llama

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

SVG = "{http://www.w3.org/2000/svg}"
ATTN = "base_model.model.model.layers.0.self_attn"


@pytest.fixture(scope="module")
def payload() -> dict[str, Any]:
    case = lora_llama()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs))


def drawn_texts(page, tmp_path: Path) -> list[str]:  # noqa: ANN001
    with page.expect_download() as info:
        page.click("[data-testid=export-svg]")
    path = tmp_path / "view.svg"
    info.value.save_as(path)
    svg = ET.fromstring(path.read_text(encoding="utf-8"))
    return [(t.text or "").strip() for t in svg.iter(f"{SVG}text")]


def open_until(page, node_id: str, item: str) -> None:  # noqa: ANN001
    """Click open the modules around `node_id` until `item` is what stands for it."""
    for _ in range(12):
        shown = page.evaluate("(id) => window.__el.__lens.visibleItemFor(id)", node_id)
        if shown == item:
            return
        assert shown and shown != node_id, shown
        pos = scroll_into_view(page, shown)
        page.mouse.click(pos["x"], pos["y"])
        wait_idle(page)
    raise AssertionError(f"{item} never stood for {node_id}")


def test_a_lora_llamas_boxes_keep_their_block_number_and_wrapper_class(
    page, payload, tmp_path, artifacts
) -> None:
    def op_in(module: str) -> str:
        return next(
            n["id"]
            for n in payload["unrolled"]["nodes"]
            if n["kind"] == "op" and n["groups"] and n["groups"][-1].startswith(f"{module}:")
        )

    open_widget(page, payload)
    k_op = op_in(f"{ATTN}.k_proj")
    open_until(page, k_op, f"@{ATTN}:1")  # the attention closed
    lines = lens(page, f"itemLines('@{ATTN}:1')")
    assert lines[:2] == ["LlamaAttention", "model.layers.0.self_attn"], lines
    assert "model.layers.0.self_attn" in drawn_texts(page, tmp_path)

    open_until(page, k_op, f"@{ATTN}.k_proj:1")  # open it: its projections closed
    page.screenshot(path=str(artifacts / "lora_llama_attention.png"))
    q = lens(page, f"itemLines('@{ATTN}.q_proj:1')")
    k = lens(page, f"itemLines('@{ATTN}.k_proj:1')")
    assert q[:2] == ["lora.Linear", "model.layers.0.self_attn.q_proj"], q
    assert k[:2] == ["Linear", "model.layers.0.self_attn.k_proj"], k
    drawn = drawn_texts(page, tmp_path)
    assert drawn.count("lora.Linear") >= 2 and "Linear" in drawn  # q_proj, v_proj; k_proj, o_proj
    assert "model.layers.0.self_attn.q_proj" in drawn
    assert not [t for t in drawn if "base_model" in t and "…" in t]  # no middle cuts
    assert page.errors == []
