"""`jupyter nbconvert --to html` of a notebook with a LensWidget: the page carries the widget's
saved state (its bundle and graph), and that state alone draws the graph.

nbconvert's page loads the widgets' embed manager (and RequireJS) from a CDN, so offline the
stock page cannot render any widget. The test says so, then shows that nothing else is missing:
with every network request blocked it imports the bundle saved in the page's widget state and
renders the graph from the saved traits, as the embed manager would.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from lens_harness import lens, wait_idle
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from lens_widget.widget import wire

REPO = Path(__file__).resolve().parents[2]
FAKE_KERNEL = Path(__file__).parent / "fixtures" / "fake_kernel.js"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
CELL = """\
import torch
from torch import nn
from lens_widget import LensWidget

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).eval()
LensWidget(model, torch.randn(2, 6))"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (REPO / "lens_widget" / "static" / "widget.js").exists():
        pytest.skip("frontend bundle not built")
    work = tmp_path_factory.mktemp("nbconvert")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    env = {  # the kernel imports this checkout's lens_widget
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(work / "config"),
    }
    NotebookClient(nb, kernel_name="python3", timeout=300, store_widget_state=True).execute(env=env)
    nbformat.write(nb, work / "widget.ipynb")
    body, _ = HTMLExporter().from_notebook_node(nb)
    out = work / "widget.html"
    out.write_text(body, encoding="utf-8")
    return out


def widget_state(html: str) -> dict:
    found = re.search(rf'<script type="{re.escape(STATE_MIME)}">(.*?)</script>', html, re.S)
    assert found, "nbconvert's page holds no widget state"
    return json.loads(found.group(1))["state"]


def test_page_holds_the_saved_widget_state(converted: Path) -> None:
    html = converted.read_text(encoding="utf-8")
    states = widget_state(html)
    lens_models = {k: s for k, s in states.items() if wire.saved_graph(s) is not None}
    assert len(lens_models) == 1
    ((model_id, saved),) = lens_models.items()
    assert saved["state"]["_esm"] == (REPO / "lens_widget" / "static" / "widget.js").read_text()
    graph = wire.saved_graph(saved)
    assert graph["modelClass"] == "Sequential" and graph["nOps"] == 3
    assert [n["func"] for n in graph["unrolled"]["nodes"] if n["kind"] == "op"] == [
        "linear",
        "relu",
        "linear",
    ]
    views = re.findall(rf'<script type="{re.escape(VIEW_MIME)}">(.*?)</script>', html, re.S)
    assert [json.loads(v)["model_id"] for v in views] == [model_id]
    # the reason the stock page needs a network: its embed manager comes from a CDN
    assert re.search(r"https://[^'\"]+/@jupyter-widgets/html-manager@[^'\"]*/embed-amd\.js", html)


def test_saved_state_alone_draws_the_graph_offline(converted: Path, page: object) -> None:
    local = ("file://", "blob:", "data:")
    blocked: list[str] = []

    def only_local(route) -> None:  # noqa: ANN001
        if route.request.url.startswith(local):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**", only_local)  # type: ignore[attr-defined]
    page.goto(converted.as_uri())  # type: ignore[attr-defined]
    assert any("html-manager" in u for u in blocked)  # the CDN the page asked for
    page.evaluate(  # type: ignore[attr-defined]
        """async ([mime, fakeKernel]) => {
          const saved = JSON.parse(document.querySelector(`script[type="${mime}"]`).textContent);
          // the graph is a binary buffer of the saved state (wire.py's bytes, base64)
          const hasGraph = (w) => (w.buffers || []).some((b) => b.path[0] === "graph");
          const m = Object.values(saved.state).find(hasGraph);
          const state = { ...m.state };
          for (const b of m.buffers) {
            const bytes = Uint8Array.from(atob(b.data), (c) => c.charCodeAt(0));
            state[b.path[0]] = new DataView(bytes.buffer);
          }
          const url = URL.createObjectURL(new Blob([state._esm], { type: "text/javascript" }));
          const widget = (await import(url)).default;
          const fake = URL.createObjectURL(new Blob([fakeKernel], { type: "text/javascript" }));
          const { createFakeModel } = await import(fake);
          const el = document.createElement("div");
          el.style.width = "1000px";
          el.classList.add("jupyter-widgets-disconnected"); // ipywidgets' mark on a saved view
          document.body.prepend(el);
          window.__el = el;
          widget.render({ model: createFakeModel(state).model, el });
        }""",
        [STATE_MIME, FAKE_KERNEL.read_text()],
    )
    wait_idle(page)
    assert lens(page, "visibleCount") >= 5 and lens(page, "drawnItems") > 0
    relu = next(i for i in lens(page, "visibleIds") if i.startswith("relu"))
    pos = page.evaluate("(id) => window.__el.__lens.nodeScreenPos(id)", relu)  # type: ignore[attr-defined]
    page.mouse.click(pos["x"], pos["y"])  # type: ignore[attr-defined]
    status = page.locator("[data-testid=activation-status]")  # type: ignore[attr-defined]
    status.wait_for()
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.querySelector('[data-testid=activation]')?.dataset.state === 'unavailable'"
    )
    assert status.inner_text() == "activations need a running kernel: re-run the cell"
    assert all(u.startswith(local) for u in page.request_urls if u not in blocked)  # type: ignore[attr-defined]
