"""Real tier: a training step in JupyterLab (1400x1000). The gradient-norm overlay opens on a
log scale and its legend says so and that its range is the whole graph's, unchanged as modules
open; the backward panel lists each leaf's gradient norm, sorted, the leaf that got none first
and marked; with the inspector and the backward panel open the graph keeps half the width."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    pytestmark,  # noqa: F401
    visible_ops_on_screen,
    wait_for_kernel_idle,
    wait_for_widget,
)

NOTEBOOK = "step.ipynb"
CELL = """\
import torch
from torch import nn
import lens_widget as lw
from model_zoo.language import gpt2

torch.manual_seed(0)
case = gpt2()
model, probe = case.model.train(), nn.Linear(32, 4)
with lw.tracing(model, save="all", grads=True) as t:
    out = model(*case.args, **case.kwargs, output_hidden_states=True)
    cut = probe(out.hidden_states[-1]).detach()  # the probe gets no gradient
    loss = out.logits.float().pow(2).mean() + 0 * cut.mean()
    loss.backward()
w = lw.LensWidget.from_log(t.log)
w"""
RANGE = f"{ROOT} [data-testid=overlay-range]"


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with lab_with_notebook(tmp_path_factory.mktemp("lab_step"), NOTEBOOK, [CELL]) as server:
        yield server


def bounds(text: str) -> tuple[str, str]:
    found = re.search(r"\(max\) (\S+)\s+(\S+) ·", text)
    assert found, text
    return found.group(1), found.group(2)


def graph_share(page) -> float:  # noqa: ANN001
    return page.evaluate(
        f"""() => {{ const root = document.querySelector('{ROOT}');
            return root.querySelector('.lens-graph-col').getBoundingClientRect().width
                 / root.querySelector('.lens-main').getBoundingClientRect().width; }}"""
    )


def test_a_training_step_reads_in_jupyterlab(lab: Lab, page: object, artifacts: Path) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")  # type: ignore[attr-defined]
    wait_for_widget(page)
    root = page.locator(ROOT).first  # type: ignore[attr-defined]

    root.locator("[data-testid=metric-picker]").select_option("gradNorm")
    page.wait_for_function(  # type: ignore[attr-defined]
        "(sel) => document.querySelector(sel)?.textContent.includes('· log (auto')", arg=RANGE
    )
    legend = root.locator("[data-testid=overlay-range]")
    assert "gradient norm (max)" in legend.inner_text()
    assert "range of the whole graph" in legend.inner_text()
    before = bounds(legend.inner_text())
    root.locator("[data-testid=expand-all]").click()
    page.wait_for_function(  # type: ignore[attr-defined]
        "(sel) => document.querySelector(sel).__lens.layoutStatus === 'idle'", arg=ROOT
    )
    assert bounds(legend.inner_text()) == before  # opening modules left the range as it was

    root.locator("[data-testid=toggle-backward]").click()
    rows = root.locator("[data-testid=gradient-panel] [data-testid=leaf-row]")
    rows.first.wait_for()
    statuses = rows.locator("[data-testid=leaf-status]").all_inner_texts()
    assert statuses[:2] == ["no gradient", "no gradient"]  # the probe's weight and bias
    assert all(s.startswith("gradient norm ") for s in statuses[2:]) and len(statuses) > 20
    norms = rows.evaluate_all("els => els.slice(2).map(e => Number(e.dataset.norm))")
    assert norms == sorted(norms, reverse=True) and norms[0] > norms[-1] > 0

    ops = page.evaluate(f"document.querySelector('{ROOT}').__lens.visibleIds")  # type: ignore[attr-defined]
    target = visible_ops_on_screen(page, [i for i in ops if not i.startswith("@")])[0]
    page.mouse.click(target["x"], target["y"])  # type: ignore[attr-defined]
    root.locator("[data-testid=inspector-id]").wait_for()
    assert graph_share(page) >= 0.5 - 1e-3
    page.screenshot(path=str(artifacts / "jupyterlab_training_step.png"))  # type: ignore[attr-defined]
    assert page.errors == []  # type: ignore[attr-defined]
