"""Real tier: a notebook saved with its widget state shows the graph again when reopened in
JupyterLab with no kernel, and the inspector says what needs one instead of waiting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from lab_server import Lab, open_in_lab, running_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    pytestmark,  # noqa: F401
    visible_ops_on_screen,
    wait_for_kernel_idle,
    wait_for_widget,
)

from lens_widget.widget import wire

NOTEBOOK = "saved.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
CELL = """\
import torch
from torch import nn
from lens_widget import LensWidget

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)).eval()
w = LensWidget(model, torch.randn(2, 3, 8, 8))
w"""


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab_saved")
    root = work / "notebooks"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, root / NOTEBOOK)
    # "Save Widget State Automatically" (off by default): widget state goes into the file
    settings = work / "config" / "lab" / "user-settings" / "@jupyter-widgets" / "jupyterlab-manager"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    with running_lab(root, work) as server:
        yield server


def saved_widget_states(lab: Lab) -> dict:
    nb = lab.api(f"/api/contents/{NOTEBOOK}")["content"]  # type: ignore[index]
    return nb["metadata"]["widgets"][WIDGET_STATE]["state"]


def test_reopened_without_kernel_shows_the_graph_and_says_what_needs_one(
    lab: Lab, page: object, artifacts: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")  # type: ignore[attr-defined]
    wait_for_widget(page)
    live_count = page.evaluate(f"document.querySelector('{ROOT}').__lens.visibleCount")  # type: ignore[attr-defined]

    # save (with the widget state), then shut the kernel down and close everything
    page.evaluate(  # type: ignore[attr-defined]
        """async () => {
          const app = window.jupyterapp;
          await app.commands.execute('docmanager:save');
          await app.shell.currentWidget.sessionContext.shutdown();
          await app.commands.execute('application:close-all');
        }"""
    )
    states = saved_widget_states(lab)
    graphs = [g for s in states.values() if (g := wire.saved_graph(s)) is not None]
    assert len(graphs) == 1 and graphs[0]["nOps"] > 0
    assert lab.api("/api/kernels") == []

    # Reopen it as a user does next week: a new kernel starts and runs nothing, so the
    # widget comes back from the saved state alone, with no kernel behind it. (Opened with no
    # kernel at all, JupyterLab's widget manager restores no saved widget: it reads the
    # notebook's state only after asking a kernel, ipywidgets#3773; nothing a widget can fix.)
    open_in_lab(lab, page, NOTEBOOK)  # in a new workspace: no tab of the first visit restored
    wait_for_kernel_idle(page)
    wait_for_widget(page)
    root = page.locator(ROOT).first  # type: ignore[attr-defined]
    assert page.evaluate(f"document.querySelector('{ROOT}').__lens.visibleCount") == live_count  # type: ignore[attr-defined]
    assert root.locator('[data-testid="status"]').inner_text() == "no kernel: graph only"
    # the state was saved: the note on keeping it (state_note.py) says nothing
    page.locator(".lens-state-note").first.wait_for(state="attached")  # type: ignore[attr-defined]
    assert not page.locator(".lens-state-note").first.is_visible()  # type: ignore[attr-defined]

    # the graph still works without a kernel; a click says what an activation needs
    ops = [n["id"] for n in graphs[0]["unrolled"]["nodes"] if n["kind"] == "op" and n["saved"]]
    target = visible_ops_on_screen(page, ops)[0]
    page.mouse.click(target["x"], target["y"])  # type: ignore[attr-defined]
    root.locator('[data-testid="inspector-id"]').wait_for(timeout=15_000)
    assert root.locator('[data-testid="inspector-id"]').inner_text().strip() == target["id"]
    status = root.locator('[data-testid="activation-status"]')
    page.wait_for_function(  # type: ignore[attr-defined]
        """(sel) => document.querySelector(sel + ' [data-testid="activation"]')
                      ?.dataset.state === 'unavailable'""",
        arg=ROOT,
        timeout=5_000,
    )
    assert status.inner_text() == "activations need a running kernel: re-run the cell"
    page.screenshot(path=str(artifacts / "jupyterlab_no_kernel.png"))  # type: ignore[attr-defined]

    # with that kernel shut down too, the graph stays and says the same
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")  # type: ignore[attr-defined]
    assert lab.api("/api/kernels") == []
    other = next(t for t in visible_ops_on_screen(page, ops) if t["id"] != target["id"])
    page.mouse.click(other["x"], other["y"])  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        """([sel, id]) => document.querySelector(sel + ' [data-testid="inspector-id"]')
                            ?.textContent.trim() === id""",
        arg=[ROOT, other["id"]],
        timeout=5_000,
    )
    assert status.inner_text() == "activations need a running kernel: re-run the cell"
    assert page.evaluate(f"document.querySelector('{ROOT}').__lens.drawnItems") > 0  # type: ignore[attr-defined]
    assert page.errors == []  # type: ignore[attr-defined]
