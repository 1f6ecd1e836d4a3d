"""A graph of 20,000 ops whose model runs ~950 blocks in a row: the widget paints it as a few
chunks of blocks (js/src/graph/chunks.ts), and an op deep inside one is found by search,
selected and drawn, with no edge through a box it does not connect."""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import kernel_log, lens, open_widget, wait_idle
from scene_checks import edge_crossings

from model_zoo.synthetic_payload import make_payload

CHUNK_LIMIT = 200  # js/src/graph/chunks.ts


@pytest.fixture(scope="module")
def big() -> dict[str, Any]:
    return make_payload(target_ops=20_000)


def deep_op(payload: dict[str, Any], module: str, func: str) -> str:
    return next(
        n["id"] for n in payload["unrolled"]["nodes"] if n["module"] == module and n["func"] == func
    )


def test_a_20k_op_graph_paints_as_chunks_and_search_reaches_an_op_inside_one(page, big) -> None:
    op = deep_op(big, "blocks.700.attn", "softmax")
    # the fake kernel plots from the op's own record: the page need not parse 40 MB of JSON
    record = next(n for n in big["unrolled"]["nodes"] if n["id"] == op)
    kernel_view = {"nodes": [record], "edges": []}
    open_widget(page, big, kernel_payload={**big, "unrolled": kernel_view, "rolled": kernel_view})
    shown = lens(page, "visibleIds")
    # ~950 blocks at the top level: a handful of chunks, each a box of ~100 blocks
    chunks = [i for i in shown if i.startswith("@#")]
    assert 5 <= len(chunks) <= 20
    # beside them only the model's output, never hidden in a closed chunk
    rest = [i for i in shown if i not in chunks]
    assert rest and all(i.startswith("output") for i in rest), rest
    first = lens(page, f"itemLines({chunks[0]!r})")
    assert first[0].startswith("input.0 … ") and " of " in first[1] and first[1].endswith("model")

    page.fill("[data-testid=search]", op)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == op
    # its chunk, block and attention module opened: the op itself is drawn and inspected
    assert lens(page, f"visibleItemFor({op!r})") == op
    assert lens(page, f"nodeScreenPos({op!r})") is not None
    expanded = lens(page, "expanded")
    assert "blocks.700" in expanded and "blocks.700.attn" in expanded
    chunk = next(a for a in expanded if a.startswith("#"))
    lo, hi = (int(x) for x in chunk[1:].split("-"))
    assert hi - lo < CHUNK_LIMIT
    assert page.locator("[data-testid=inspector-id]").inner_text().startswith(op)
    # the kernel was told, with the chunk's address (lens_widget/widget/group_keys.py accepts it)
    sets = [v for k, v in kernel_log(page)["sets"] if k == "expanded"]
    assert chunk in sets[-1]
    assert edge_crossings(lens(page, "sceneGeometry()")) == []
    assert lens(page, "visibleCount") < 400
    assert page.errors == []
