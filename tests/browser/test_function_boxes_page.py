"""A box of a plain function's ops looks like what it is (#24): GPT-2's `create_causal_mask()`
is drawn apart from module boxes (dashed border, italic title, an "fn" tag), closed and open,
and the inspector of an op inside it names the function and the module that called it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from lens_harness import click_item, lens, open_widget, wait_idle

pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import STRUCTURE_MODELS  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
MASK = "transformer.create_causal_mask():1"


@pytest.fixture(scope="module")
def gpt2() -> dict[str, Any]:
    case = STRUCTURE_MODELS["gpt2_deep"]()
    return build_payload(lw.trace(case.model, case.args, case.kwargs))


def svg_of_view(page, tmp_path: Path) -> ET.Element:  # noqa: ANN001
    with page.expect_download() as info:
        page.click("[data-testid=export-svg]")
    path = tmp_path / "view.svg"
    info.value.save_as(path)
    return ET.fromstring(path.read_text(encoding="utf-8"))


def texts(svg: ET.Element) -> dict[str, ET.Element]:
    return {(t.text or "").strip(): t for t in svg.iter(f"{SVG}text")}


def dashed_near(svg: ET.Element, text: ET.Element) -> bool:
    """A dashed stroke whose path starts within the box around `text` (its border)."""
    x, y = float(text.get("x", 0)), float(text.get("y", 0))
    for p in svg.iter(f"{SVG}path"):
        if not p.get("stroke-dasharray"):
            continue
        px, py = (float(v) for v in re.findall(r"-?[\d.]+", p.get("d", ""))[:2])
        if abs(px - x) < 200 and abs(py - y) < 40:
            return True
    return False


def test_a_function_box_is_drawn_apart_and_its_ops_name_it(page, gpt2, tmp_path, artifacts) -> None:
    open_widget(page, gpt2)
    assert f"@{MASK}" in lens(page, "visibleIds")  # closed on the first view
    svg = svg_of_view(page, tmp_path)
    found = texts(svg)
    title = found["create_causal_mask()"]
    assert title.get("font-style") == "italic"
    assert "fn" in found  # its tag
    assert dashed_near(svg, title)
    block = next(t for k, t in found.items() if k.startswith("GPT2Block"))
    assert block.get("font-style") is None and not dashed_near(svg, block)  # modules as before

    click_item(page, f"@{MASK}")  # open: its header reads the same way
    wait_idle(page)
    page.screenshot(path=str(artifacts / "function_box_open.png"))
    assert MASK.split(":")[0] in lens(page, "expanded")
    svg = svg_of_view(page, tmp_path)
    header = next(t for k, t in texts(svg).items() if k.endswith("create_causal_mask()"))
    assert header.get("font-style") == "italic"

    # an op inside it: the inspector names the function and its caller
    inside = next(
        n["id"]
        for n in gpt2["unrolled"]["nodes"]
        if MASK in n["groups"] and n["id"] in lens(page, "visibleIds")
    )
    click_item(page, inside)
    wait_idle(page)
    fn = page.inner_text("[data-testid=inspector-function]")
    assert fn.startswith("create_causal_mask()") and "called in transformer" in fn
    assert page.errors == []
