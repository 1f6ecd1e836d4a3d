"""Room to read (issue 24, item 12): in a wide widget, a tall chain (GPT-2's 12 blocks, its
stack opened) is laid out in columns side by side instead of one column that leaves most of
the canvas empty; a narrow widget keeps one column; no edge crosses a box either way.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_12_payload
from lens_harness import click_item, lens, open_widget, wait_idle
from scene_checks import edge_crossings

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


STACK = "transformer.h.0×12"


@pytest.fixture(scope="module")
def gpt2_12() -> dict[str, Any]:
    return gpt2_12_payload()


def block_columns(page) -> list[float]:
    geo = lens(page, "sceneGeometry()")
    xs = {round(i["x"] + i["w"] / 2) for i in geo["items"] if i["id"].startswith("@transformer.h.")}
    return sorted(xs)


@pytest.mark.parametrize("width", [1340, 600])
def test_a_tall_stack_uses_the_width_it_has(page, gpt2_12, width, artifacts) -> None:
    open_widget(page, gpt2_12, width=width)
    click_item(page, f"@{STACK}")
    wait_idle(page)
    page.screenshot(path=str(artifacts / f"wide_layout_{width}.png"))
    columns = block_columns(page)
    geo = lens(page, "sceneGeometry()")
    (stack,) = [b for b in geo["boxes"] if b["key"] == STACK]
    if width > 1000:
        assert len(columns) >= 2, columns  # side by side
        assert stack["w"] > 0.5 * stack["h"]
    else:
        assert len(columns) == 1, columns  # narrow: one column, as before
    assert edge_crossings(geo) == []
    assert page.errors == []


def test_a_taller_graph_puts_the_stack_back_in_one_column(page, gpt2_12) -> None:
    open_widget(page, gpt2_12, width=1340)
    click_item(page, f"@{STACK}")
    wait_idle(page)
    assert len(block_columns(page)) >= 2
    laid = lens(page, "layoutCount")
    page.evaluate("() => window.__fake.kernelSet('height', 2000)")  # room for one column
    # the resize lays the graph out anew
    page.wait_for_function(f"() => window.__el.__lens.layoutCount > {laid}")
    wait_idle(page)
    assert len(block_columns(page)) == 1
    assert page.errors == []
