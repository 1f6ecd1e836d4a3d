"""Real tier (issue 36 items 2 and 4): in JupyterLab at 1400x1000, models nobody tuned the
widget for, from model_zoo (small, random): a Faster R-CNN-like detector, a diffusers UNet, a
Mixtral MoE and a PEFT LoRA Llama. What a person sees: the detector's outputs named boxes,
labels, scores; its box predictor's inspector listing both outputs, with a picker that
switches the plot and axis names that fit each (classes, not "feature"); the UNet's down
block listing its three outputs; the router's three tensors, its experts and top-k named; the
LoRA model's attention projection plotted as (batch, token, feature).

With LENS_UPDATE_DOC_IMAGES=1 the inspector shots also replace docs/img/lab_*.png."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

pytest.importorskip("diffusers")
pytest.importorskip("peft")

NOTEBOOK = "models.ipynb"
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
SETUP = """\
from lens_widget import LensWidget

def widget(case):
    return LensWidget(case.model, case.args, case.kwargs)"""
DETECTOR = "from model_zoo.detection import faster_rcnn_like\nw = widget(faster_rcnn_like())\nw"
UNET = "from model_zoo.diffusion import unet2d_condition\nw = widget(unet2d_condition())\nw"
MOE = "from model_zoo.moe import mixtral\nw = widget(mixtral())\nw"
LORA = "from model_zoo.wrapped import lora_llama\nw = widget(lora_llama())\nw"
HOOK = f"document.querySelector('{ROOT}').__lens"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    cells = [SETUP, DETECTOR, UNET, MOE, LORA]
    with lab_with_notebook(tmp_path_factory.mktemp("lab_models"), NOTEBOOK, cells) as server:
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


def open_module(page: object, address: str) -> object:
    """Search the module, Enter: its inspector, with the list of its outputs."""
    root = page.locator(ROOT).first  # type: ignore[attr-defined]
    root.locator("[data-testid=search]").fill(address)
    root.locator("[data-testid=search-result]").first.wait_for()
    root.locator("[data-testid=search]").press("Enter")
    root.locator("[data-testid=module-outputs]").wait_for(timeout=30_000)
    assert root.locator("[data-testid=module-title]").inner_text() == address
    return root


def outputs_listed(root: object) -> list[str]:
    return [b.inner_text() for b in root.locator("[data-testid=module-outputs] button").all()]  # type: ignore[attr-defined]


def plotted(root: object, shape_dtype: str, dims: str) -> None:
    """The activation plotted: its shape and dtype, and its axis names."""
    root.locator("[data-testid=activation]").filter(has_text=shape_dtype).wait_for(timeout=30_000)  # type: ignore[attr-defined]
    root.locator("[data-testid=plot-main].js-plotly-plot").wait_for(timeout=30_000)  # type: ignore[attr-defined]
    assert root.locator("[data-testid=activation-dims]").inner_text() == dims  # type: ignore[attr-defined]


def shoot(root: object, artifacts: Path, name: str) -> None:
    shot = artifacts / name
    root.locator("[data-testid=module-outputs]").scroll_into_view_if_needed()  # type: ignore[attr-defined]
    root.locator("[data-testid=inspector]").screenshot(path=str(shot))  # type: ignore[attr-defined]
    if os.environ.get("LENS_UPDATE_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(exist_ok=True)
        shutil.copy(shot, DOC_IMAGES / name)


def test_the_detector_names_its_outputs_and_shows_both_of_a_head(lab: Lab, page, artifacts):
    run_cells(lab, page, [0, 1])
    page.screenshot(path=str(artifacts / "lab_detector_first_view.png"))
    lines = page.evaluate(f"{HOOK}.itemLines('@output.0')")
    assert lines is not None and lines[0] == "boxes, labels, scores"  # it read "0 ×3"
    root = open_module(page, "roi_heads.box_predictor")
    assert outputs_listed(root) == ["0 (150, 5)", "1 (150, 20)"]  # it listed one
    plotted(root, "(150, 5) float32", "(dim 0, class)")  # 150 proposals are no batch
    root.locator("[data-testid=module-output-picker]").select_option("1")
    plotted(root, "(150, 20) float32", "(dim 0, feature)")
    shoot(root, artifacts, "lab_detector_box_predictor.png")
    # the backbone's dict of levels: each by its key
    root = open_module(page, "backbone.fpn")
    assert outputs_listed(root) == ["0 (1, 16, 16, 16)", "1 (1, 16, 8, 8)", "pool (1, 16, 4, 4)"]
    plotted(root, "(1, 16, 16, 16) float32", "(batch, channel, height, width)")
    assert page.errors == []


def test_the_unet_lists_a_down_block_s_three_outputs(lab: Lab, page, artifacts):
    run_cells(lab, page, [0, 2])
    page.screenshot(path=str(artifacts / "lab_unet_first_view.png"))
    root = open_module(page, "down_blocks.0")
    # (hidden states, (the residuals the up blocks read)): three tensors, by their place
    assert [t.split(" ")[0] for t in outputs_listed(root)] == ["0", "1.0", "1.1"]
    plotted(root, "(2, 8, 4, 4) float32", "(batch, channel, height, width)")
    shoot(root, artifacts, "lab_unet_down_block.png")
    assert page.errors == []


def test_the_router_shows_its_three_tensors_named_by_evidence(lab: Lab, page, artifacts):
    run_cells(lab, page, [0, 3])
    root = open_module(page, "model.layers.0.mlp.gate")
    assert outputs_listed(root) == ["0 (12, 4)", "1 (12, 2)", "2 (12, 2)"]
    plotted(root, "(12, 4) float32", "(token, expert)")  # its experts read "feature"
    root.locator("[data-testid=module-output-picker]").select_option("2")
    plotted(root, "(12, 2) int64", "(token, top-k)")
    assert root.locator("[data-testid=output-picker]").count() == 0  # one picker, the module's
    shoot(root, artifacts, "lab_moe_router.png")
    assert page.errors == []


def test_the_lora_llama_plots_its_projection_by_token_and_feature(lab: Lab, page, artifacts):
    run_cells(lab, page, [0, 4])
    page.screenshot(path=str(artifacts / "lab_lora_first_view.png"))
    root = open_module(page, "base_model.model.model.layers.0.self_attn")
    # (attn_output, attn_weights): the weights are None here, the output is listed by its place
    assert outputs_listed(root) == ["0 (1, 12, 32)"]
    plotted(root, "(1, 12, 32) float32", "(batch, token, feature)")
    shoot(root, artifacts, "lab_lora_self_attn.png")
    assert page.errors == []
