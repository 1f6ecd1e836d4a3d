"""Real tier (#24): what a person meets first in a 1400x1000 JupyterLab. GPT-2 of 12 layers
with an attention mask opens on its own structure (input, embeddings, the blocks, the head,
the outputs; the mask builder one closed box) and keeps every output after Collapse all; a
GRU-cell language model opens rolled, input and output on screen, saying why, and `w.view`
says so in the kernel.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    Kernel,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

NOTEBOOK = "structure.ipynb"
README_SHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshot.png"
SETUP = """\
import torch
from lens_widget import LensWidget
from model_zoo import STRUCTURE_MODELS

def widget(name):
    case = STRUCTURE_MODELS[name]()
    return LensWidget(case.model, case.args, case.kwargs)"""
GPT2 = "w = widget('gpt2_deep')\nw"
GRU = "w = widget('gru_cell_lm')\nw"
HOOK = f"document.querySelector('{ROOT}').__lens"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_with_notebook(
        tmp_path_factory.mktemp("lab_structure"), NOTEBOOK, [SETUP, GPT2, GRU]
    ) as server:
        yield server


def run_cells(lab: Lab, page: object, cells: list[int]) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    for index in cells:
        page.evaluate(  # type: ignore[attr-defined]
            """async (i) => { const app = window.jupyterapp;
              app.shell.currentWidget.content.activeCellIndex = i;
              await app.commands.execute('notebook:run-cell'); }""",
            index,
        )
        wait_for_kernel_idle(page)
    wait_for_widget(page)


def on_screen(page: object, item: str) -> bool:
    """Whether the item is drawn inside the widget's canvas, as it is on screen now."""
    pos = page.evaluate(f"(id) => {HOOK}.nodeScreenPos(id)", item)  # type: ignore[attr-defined]
    box = page.locator(f'{ROOT} [data-testid="graph-canvas"]').first.bounding_box()  # type: ignore[attr-defined]
    return (
        bool(pos)
        and box is not None
        and (
            box["x"] <= pos["x"] <= box["x"] + box["width"]
            and box["y"] <= pos["y"] <= box["y"] + box["height"]
        )
    )


def test_gpt2_opens_on_its_structure_with_the_mask_builder_closed(
    lab: Lab, page: object, artifacts: Path
) -> None:
    run_cells(lab, page, [0, 1])
    shot = artifacts / "jupyterlab_gpt2_deep_first_view.png"
    page.screenshot(path=str(shot))  # type: ignore[attr-defined]
    if os.environ.get("LENS_UPDATE_DOC_IMAGES") == "1":  # the README's picture: this first view
        from PIL import Image

        image = Image.open(shot).convert("RGB")  # 256 colors keep it small
        image.quantize(colors=256).save(README_SHOT, optimize=True)
    items = page.evaluate(f"{HOOK}.visibleIds")  # type: ignore[attr-defined]
    for item in (
        "input.0",
        "input.attention_mask",
        "@transformer.h.0×12",
        "output.logits",
        "@output.cache",
        "@transformer.create_causal_mask():1",
    ):
        assert item in items and on_screen(page, item), item
    # the embedding, the final norm and the head: their boxes, or open on their one op
    for box, op in (("@transformer.wte:1", "embedding"), ("@transformer.ln_f:1", "layer_norm"),
                    ("@lm_head:1", "linear")):  # fmt: skip
        shown = box if box in items else next(i for i in items if i.startswith(op))
        assert on_screen(page, shown), shown
    assert len(items) <= 22  # the mask's dozens of ops are one box, not the first screen
    # read without effort: the graph fills the notebook's height and the head and outputs sit
    # beside GPT2Model, so all of the above is on screen at 75% or more
    assert page.evaluate(f"{HOOK}.scale") >= 0.75  # type: ignore[attr-defined]
    canvas = page.locator(f'{ROOT} [data-testid="graph-canvas"]').first.bounding_box()  # type: ignore[attr-defined]
    assert canvas is not None and canvas["y"] + canvas["height"] <= 1000  # all in the window

    # Collapse all: every output is still there
    page.locator(f'{ROOT} [data-testid="collapse-all"]').click()  # type: ignore[attr-defined]
    page.wait_for_function(f"() => {HOOK}.layoutStatus === 'idle'")  # type: ignore[attr-defined]
    items = page.evaluate(f"{HOOK}.visibleIds")  # type: ignore[attr-defined]
    assert "output.logits" in items and "@output.cache" in items
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_gru_cell_loop_opens_rolled_and_says_why(lab: Lab, page: object, artifacts: Path):
    run_cells(lab, page, [0, 2])
    page.screenshot(path=str(artifacts / "jupyterlab_gru_cell_lm_first_view.png"))  # type: ignore[attr-defined]
    assert page.evaluate(f"{HOOK}.view") == "rolled"  # type: ignore[attr-defined]
    assert on_screen(page, "input.0") and on_screen(page, "output")
    hint = page.locator(f'{ROOT} [data-testid="view-hint"]')  # type: ignore[attr-defined]
    assert hint.is_visible() and "recurrent" in hint.inner_text()
    kernel = Kernel(lab.connection_file())
    try:
        assert kernel.run("print(w.view)").strip() == "rolled"
    finally:
        kernel.close()
    assert page.errors == []  # type: ignore[attr-defined]
