"""The toolbar's SVG button: the download is the view on screen, vector, with its labels."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from lens_harness import click_item, lens, open_widget, wait_idle

from model_zoo.synthetic_payload import make_payload

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def payload() -> dict:
    return make_payload(n_layers=12, n_loop=3)


def on_screen(page) -> list[str]:  # noqa: ANN001
    """Nodes (not modules) whose centre is inside the canvas."""
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    found = []
    for item in lens(page, "visibleIds"):
        pos = page.evaluate("(id) => window.__el.__lens.nodeScreenPos(id)", item)
        inside = pos and (
            box["x"] + 2 < pos["x"] < box["x"] + box["width"] - 2
            and box["y"] + 2 < pos["y"] < box["y"] + box["height"] - 2
        )
        if inside and not item.startswith("@"):
            found.append(item)
    return found


def download_svg(page, tmp_path: Path) -> tuple[str, ET.Element]:  # noqa: ANN001
    with page.expect_download() as info:
        page.click("[data-testid=export-svg]")
    download = info.value
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    return download.suggested_filename, ET.fromstring(path.read_text(encoding="utf-8"))


def test_svg_download_is_the_view_on_screen_as_vector_with_labels(page, payload, tmp_path) -> None:
    open_widget(page, payload)
    click_item(page, "@blocks.0.attn:1")  # an expanded module and a selection in the picture
    wait_idle(page)
    visible = set(lens(page, "visibleIds"))
    op = next(
        n["id"]
        for n in payload["unrolled"]["nodes"]
        if n["func"] == "softmax" and n["id"] in visible
    )
    click_item(page, op)
    wait_idle(page)
    shown = on_screen(page)
    assert len(shown) >= 5

    name, svg = download_svg(page, tmp_path)
    assert name.endswith(".svg") and name.startswith("TinyViT")
    assert svg.tag == f"{SVG}svg"
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert svg.get("viewBox") == f"0 0 {canvas['width']:g} {canvas['height']:g}"

    # vector only: shapes and text, no raster image anywhere
    tags = {el.tag.removeprefix(SVG) for el in svg.iter()}
    assert {"path", "text", "rect"} <= tags
    assert not tags & {"image", "foreignObject"}

    # every node on screen has its label as text
    texts = [el.text or "" for el in svg.iter(f"{SVG}text")]
    funcs = {n["id"]: n["func"] for n in payload["unrolled"]["nodes"]}
    for node in shown:
        assert any(t.startswith(funcs[node][:30]) for t in texts), node
    assert any("Attention" in t for t in texts)  # the expanded module's header

    # a zoomed-out view keeps its labels, in an SVG enlarged to read them
    page.click("[data-testid=fit]")
    wait_idle(page)
    scale = lens(page, "scale")
    _, far = download_svg(page, tmp_path)
    if scale < 1:
        assert float(far.get("width")) > canvas["width"]
    assert len(list(far.iter(f"{SVG}text"))) >= len(texts) // 2
    assert page.errors == []
