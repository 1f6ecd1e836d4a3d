"""Real tier: `lw.show(...)` keeps an interactive graph in the notebook itself.

A notebook with `lw.show(log)` and a plain widget is run in JupyterLab with its DEFAULT settings
(widget state not saved), saved, its kernel shut down, and reopened: the shown graph is
interactive (a click selects a node) and the widget's own output says how to keep its state.
`jupyter nbconvert --to html` of the same notebook, opened from disk with the network blocked,
shows the graph too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from lab_server import Lab, open_in_lab, running_lab, write_notebook
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    ROOT,
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "shown.ipynb"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SHOW_CELL = """\
import torch
from torch import nn
import lens_widget as lw

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)).eval()
x = torch.randn(2, 3, 8, 8)
lw.show(lw.trace(model, x))"""
WIDGET_CELL = "w = lw.LensWidget(model, x)\nw"
FRAME = "iframe.lens-show-frame"
NOTE = ".lens-state-note"
PAGE_READY = """() => {
  const app = document.getElementById('lens-app');
  return !!app && !!app.__lens && app.__lens.layoutStatus === 'idle' && app.__lens.visibleCount > 0;
}"""


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab_show")
    root = work / "notebooks"
    root.mkdir()
    write_notebook(root / NOTEBOOK, [SHOW_CELL, WIDGET_CELL])
    with running_lab(root, work) as server:  # default settings: no widget state saved
        yield server


def shown_frame(page):  # noqa: ANN001, ANN201
    """The first `lw.show` output's page, once its graph is laid out."""
    frame_el = page.locator(FRAME).first
    frame_el.wait_for(state="attached", timeout=120_000)
    frame_el.scroll_into_view_if_needed()
    frame = frame_el.element_handle().content_frame()
    frame.wait_for_function(PAGE_READY, timeout=60_000)
    return frame


def click_a_node(page, frame) -> str:  # noqa: ANN001
    """Click the first node drawn inside the shown page's canvas, as a person would."""
    frame_el = page.locator(FRAME).first
    frame_el.scroll_into_view_if_needed()
    box = frame_el.bounding_box()
    target = frame.evaluate(
        """() => {
          const l = document.getElementById('lens-app').__lens;
          const canvas = document.querySelector('[data-testid="graph-canvas"]')
            .getBoundingClientRect();
          for (const id of l.visibleIds) {
            if (id.startsWith('@')) continue;  // a module box opens, it does not select
            const p = l.nodeScreenPos(id);
            if (p && p.x > canvas.left + 4 && p.x < canvas.right - 4 &&
                p.y > canvas.top + 4 && p.y < canvas.bottom - 4) return { id, ...p };
          }
          return null;
        }"""
    )
    assert target, "no node drawn in the shown page's canvas"
    x, y = box["x"] + target["x"], box["y"] + target["y"]
    assert 0 < y < page.viewport_size["height"], "the node is off the window"
    page.mouse.click(x, y)
    frame.wait_for_function(
        "(id) => document.getElementById('lens-app').__lens.selected === id",
        arg=target["id"],
        timeout=10_000,
    )
    inspector = frame.locator('[data-testid="inspector-id"]')
    inspector.wait_for(timeout=10_000)
    assert inspector.inner_text().strip() == target["id"]
    return target["id"]


def test_shown_graph_survives_a_reopen_with_default_settings(
    lab: Lab, page: object, artifacts: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")  # type: ignore[attr-defined]
    frame = shown_frame(page)
    click_a_node(page, frame)
    wait_for_widget(page)
    # the widget is drawn: its note says nothing
    note = page.locator(NOTE).first  # type: ignore[attr-defined]
    note.wait_for(state="attached")
    assert not note.is_visible()

    page.evaluate(  # type: ignore[attr-defined]
        """async () => {
          const app = window.jupyterapp;
          await app.commands.execute('docmanager:save');
          await app.shell.currentWidget.sessionContext.shutdown();
          await app.commands.execute('application:close-all');
        }"""
    )
    saved = lab.api(f"/api/contents/{NOTEBOOK}")["content"]  # type: ignore[index]
    assert WIDGET_STATE not in saved["metadata"].get("widgets", {})  # default settings
    assert lab.api("/api/kernels") == []

    # reopened next week: the shown graph is back and works with no kernel at all
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")  # type: ignore[attr-defined]
    assert lab.api("/api/kernels") == []
    frame = shown_frame(page)
    selected = click_a_node(page, frame)
    assert frame.evaluate("() => document.getElementById('lens-app').__lens.view") == "unrolled"
    # the widget could not come back: its note says how to keep it
    assert page.locator(ROOT).count() == 0  # type: ignore[attr-defined]
    note = page.locator(NOTE).first  # type: ignore[attr-defined]
    note.scroll_into_view_if_needed()
    assert note.is_visible()
    assert "Save Widget State Automatically" in note.inner_text()
    page.screenshot(path=str(artifacts / "show_reopened.png"))  # type: ignore[attr-defined]
    assert selected
    # ipywidgets logs the missing model it reports, JupyterLab the debugger it asked the
    # kernel shut down under it; nothing else may fail
    expected = ("model not found", "restore the debugger state")
    others = [e for e in page.errors if not any(x in e for x in expected)]  # type: ignore[attr-defined]
    assert others == [], others


def executed_notebook(work: Path) -> nbformat.NotebookNode:
    """The notebook run by nbclient (a kernel of its own, as on another machine): its
    outputs are unsigned, so JupyterLab opens it untrusted."""
    write_notebook(work / NOTEBOOK, [SHOW_CELL, WIDGET_CELL])
    nb = nbformat.read(work / NOTEBOOK, as_version=4)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(work / "config"),
    }
    NotebookClient(nb, kernel_name="python3", timeout=300).execute(env=env)
    return nb


def test_an_untrusted_notebook_says_how_to_see_the_graph(
    lab: Lab, page: object, tmp_path: Path
) -> None:
    """A notebook run elsewhere is untrusted: JupyterLab sanitizes its HTML, dropping the
    frame; what is left says to trust the notebook."""
    nbformat.write(executed_notebook(tmp_path), lab.root_dir / "theirs.ipynb")
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    open_in_lab(lab, page, "theirs.ipynb")
    shown = page.locator(".lens-show").first  # type: ignore[attr-defined]
    shown.wait_for(timeout=60_000)
    assert page.locator(FRAME).count() == 0  # type: ignore[attr-defined]
    assert "Trust Notebook" in shown.inner_text()


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("nbconvert_show")
    body, _ = HTMLExporter().from_notebook_node(executed_notebook(work))
    out = work / "shown.html"
    out.write_text(body, encoding="utf-8")
    return out


def test_nbconvert_html_opened_offline_shows_the_graph(converted: Path, page: object) -> None:
    url = converted.resolve().as_uri()
    aborted: list[str] = []

    def only_the_file(route) -> None:  # noqa: ANN001
        if route.request.url == url or route.request.url.startswith(("blob:", "data:")):
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort()

    page.route("**", only_the_file)  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page.goto(url)  # type: ignore[attr-defined]
    frame = shown_frame(page)
    click_a_node(page, frame)
    # the widget has no saved state: nbconvert shows its note in its place
    note = page.locator(NOTE).first  # type: ignore[attr-defined]
    assert note.is_visible() and "lens_widget.show(w)" in note.inner_text()
    # only nbconvert's own CDN scripts (RequireJS, the widgets' manager) were refused
    assert all(not u.startswith("file://") for u in aborted)
    assert not [e for e in page.errors if "lens" in e.lower()]  # type: ignore[attr-defined]
