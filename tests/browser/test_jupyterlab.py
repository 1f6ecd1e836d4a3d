"""Real tier: the demo notebook in a headless JupyterLab; click a node, read the trait back.

It shows the demo's GPT-2 (its blocks folded, ×N).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, open_in_lab, running_lab

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "lens_widget" / "static" / "widget.js"
SETUP_CELL = "import lens_widget"  # the imports of notebooks/demo.ipynb
WIDGET_CELL = "LensWidget(gpt"  # its GPT-2 widget
WIDGET = "w_gpt"
ROOT = '[data-testid="lens-root"]'

# Locally a missing bundle skips; in CI (`make test` builds it) it must fail instead.
pytestmark = pytest.mark.skipif(
    not BUNDLE.exists() and not os.environ.get("CI"),
    reason="frontend bundle not built: run `make` (npm run build)",
)


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab")
    root = work / "notebooks"
    shutil.copytree(REPO / "notebooks", root)
    with running_lab(root, work) as server:
        yield server


class Kernel:
    """A second client on the notebook's kernel, to read widget traits back."""

    def __init__(self, connection_file: Path) -> None:
        from jupyter_client import BlockingKernelClient

        self.client = BlockingKernelClient(connection_file=str(connection_file))
        self.client.load_connection_file()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str) -> str:
        out: list[str] = []

        def hook(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        reply = self.client.execute_interactive(code, output_hook=hook, timeout=60)
        assert reply["content"]["status"] == "ok", "".join(out)
        return "".join(out)

    def close(self) -> None:
        self.client.stop_channels()


def wait_for_kernel_idle(page: object) -> None:
    page.wait_for_function(  # type: ignore[attr-defined]
        """() => {
          const bar = document.querySelector('#jp-main-statusbar');
          return !!bar && /\\|\\s*Idle/.test(bar.textContent || '');
        }""",
        timeout=90_000,
    )


def run_through_widget_cell(page: object) -> None:
    # Through JupyterLab's own commands (exposed by --LabApp.expose_app_in_browser): the same
    # path as the Run menu, without racing keyboard focus against the widget. Only the setup
    # cell and the widget's cell run: the page holds that one widget.
    indices = page.evaluate(  # type: ignore[attr-defined]
        """async (markers) => {
          const app = window.jupyterapp;
          const notebook = app.shell.currentWidget.content;
          const found = [];
          for (const marker of markers) {
            const index = notebook.widgets.findIndex(
              (c) => c.model.sharedModel.getSource().includes(marker));
            found.push(index);
            if (index < 0) break;
            notebook.activeCellIndex = index;
            await app.commands.execute('notebook:run-cell');
          }
          return found;
        }""",
        [SETUP_CELL, WIDGET_CELL],
    )
    assert min(indices) >= 0, f"no cells containing {SETUP_CELL!r}, {WIDGET_CELL!r} in demo.ipynb"


def visible_ops_on_screen(page: object, op_ids: list[str]) -> list[dict]:
    """Op nodes drawn inside both the canvas and the viewport, with their screen centres."""
    return page.evaluate(  # type: ignore[attr-defined]
        """([rootSel, ids]) => {
          const root = document.querySelector(rootSel);
          const dbg = root.__lens;
          const canvas = root.querySelector('[data-testid="graph-canvas"]').getBoundingClientRect();
          const shown = new Set(dbg.visibleIds);
          const out = [];
          for (const id of ids) {
            if (!shown.has(id)) continue;
            const p = dbg.nodeScreenPos(id);
            if (!p) continue;
            const inside = p.x > canvas.left + 4 && p.x < canvas.right - 4 &&
              p.y > canvas.top + 4 && p.y < canvas.bottom - 4 &&
              p.y > 0 && p.y < window.innerHeight && p.x > 0 && p.x < window.innerWidth;
            if (inside) out.push({ id, x: p.x, y: p.y });
          }
          return out;
        }""",
        [ROOT, op_ids],
    )


def poll(fn, want: str, timeout: float = 30) -> str:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    got = fn()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.25)
        got = fn()
    return got


def wait_for_widget(page: object) -> None:
    """The first widget of the page is rendered and its layout is done."""
    root = page.locator(ROOT).first  # type: ignore[attr-defined]
    root.wait_for(state="attached", timeout=120_000)
    root.scroll_into_view_if_needed()
    page.locator(f'{ROOT} [data-testid="graph-canvas"]').first.wait_for(timeout=30_000)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        """(sel) => {
          const d = document.querySelector(sel)?.__lens;
          return !!d && d.layoutStatus === 'idle' && d.visibleCount > 0;
        }""",
        arg=ROOT,
        timeout=60_000,
    )


def op_ids(kernel: Kernel) -> list[str]:
    return json.loads(
        kernel.run(
            f"import json; print(json.dumps([n['id'] for n in {WIDGET}.graph['unrolled']['nodes']"
            " if n['kind'] == 'op']))"
        )
    )


def click_an_op_and_see_its_plot(page: object, op_ids: list[str]) -> dict:
    """Click the last op on screen (in execution order); its inspector opens with a plot."""
    candidates = visible_ops_on_screen(page, op_ids)
    assert candidates, f"no op node on screen among {op_ids}"
    target = candidates[-1]
    page.mouse.click(target["x"], target["y"])  # type: ignore[attr-defined]
    inspector_id = page.locator(f'{ROOT} [data-testid="inspector-id"]').first  # type: ignore[attr-defined]
    inspector_id.wait_for(timeout=15_000)
    assert inspector_id.inner_text().strip() == target["id"]
    plot = page.locator(f'{ROOT} [data-testid="plot-main"] .main-svg').first  # type: ignore[attr-defined]
    plot.wait_for(timeout=30_000)
    return target


def open_demo_widget(lab: Lab, page: object, height: int) -> None:
    """Open the demo notebook, run it down to the GPT-2 widget's cell, wait for the widget."""
    page.set_viewport_size({"width": 1400, "height": height})  # type: ignore[attr-defined]
    open_in_lab(lab, page, "demo.ipynb")
    wait_for_kernel_idle(page)
    run_through_widget_cell(page)
    wait_for_widget(page)


def test_click_node_shows_activation_and_syncs_selected(
    lab: Lab, page: object, artifacts: Path
) -> None:
    open_demo_widget(lab, page, height=1000)

    kernel = Kernel(lab.connection_file())
    try:
        ops = op_ids(kernel)
        assert kernel.run(f"print({WIDGET}.selected)").strip() == ""
        # the first view shows the whole model, its blocks folded into one
        stacks = kernel.run(f"print(len({WIDGET}.graph['repeatedBlocks']))").strip()
        assert stacks == "1"
        shown = page.evaluate(f"document.querySelector('{ROOT}').__lens.visibleIds")  # type: ignore[attr-defined]
        assert "@transformer.h.0×2" in shown and "output.logits" in shown
        target = click_an_op_and_see_its_plot(page, ops)
        # the real widget in JupyterLab, an op clicked
        page.wait_for_timeout(500)  # type: ignore[attr-defined]
        page.screenshot(path=str(artifacts / "jupyterlab_demo.png"))  # type: ignore[attr-defined]

        selected = poll(lambda: kernel.run(f"print({WIDGET}.selected)").strip(), target["id"])
        assert selected == target["id"]

        # the expansion the frontend opened with reached the kernel (and passed validation)
        shown = page.evaluate(f"document.querySelector('{ROOT}').__lens.expanded")  # type: ignore[attr-defined]
        assert shown, "the GPT-2 opens with its modules expanded"
        expanded = kernel.run(f"print(json.dumps(sorted({WIDGET}.expanded)))")
        assert json.loads(expanded) == shown

        # and the other way: the kernel selects, the inspector follows
        other = next(i for i in ops if i != target["id"])
        kernel.run(f"{WIDGET}.selected = {other!r}")
        page.wait_for_function(  # type: ignore[attr-defined]
            """([sel, id]) => {
              const el = document.querySelector(sel + ' [data-testid="inspector-id"]');
              return !!el && el.textContent.trim() === id;
            }""",
            arg=[ROOT, other],
            timeout=15_000,
        )
    finally:
        kernel.close()

    assert page.errors == []  # type: ignore[attr-defined]


# ---- a live theme switch, and the wheel, in the real JupyterLab ---------------------------

LIGHT_BG, DARK_BG = "251,252,253", "27,30,35"  # render/theme.ts LIGHT.bg, DARK.bg
LIGHT_TEXT, DARK_TEXT = "rgb(31, 41, 51)", "rgb(230, 233, 237)"  # LIGHT.text, DARK.text

WIDGET_LOOKS = """(sel) => {
  const root = document.querySelector(sel);
  const canvas = root.querySelector('[data-testid="graph-canvas"]');
  const px = canvas.getContext('2d').getImageData(2, 2, 1, 1).data.slice(0, 3).join();
  const tick = root.querySelector('[data-testid="plot-hist"] .xtick text');
  const swatch = root.querySelector('[data-testid="legend"] i');
  return { canvas: px, tick: tick && tick.style.fill,
           swatch: getComputedStyle(swatch).backgroundColor };
}"""


def change_theme(page: object, theme: str) -> None:
    page.evaluate(  # type: ignore[attr-defined]
        "(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
    )


def wait_for_looks(page: object, canvas: str, tick: str) -> dict:
    page.wait_for_function(  # type: ignore[attr-defined]
        f"([sel, canvas, tick]) => {{ const l = ({WIDGET_LOOKS})(sel);"
        " return l.canvas === canvas && l.tick === tick; }",
        arg=[ROOT, canvas, tick],
        timeout=30_000,
    )
    return page.evaluate(WIDGET_LOOKS, ROOT)  # type: ignore[attr-defined]


def test_live_theme_switch_and_the_wheel_in_jupyterlab(
    lab: Lab, page: object, artifacts: Path
) -> None:
    open_demo_widget(lab, page, height=900)
    kernel = Kernel(lab.connection_file())
    try:
        click_an_op_and_see_its_plot(page, op_ids(kernel))
    finally:
        kernel.close()
    page.locator(f'{ROOT} [data-testid="plot-hist"] .xtick text').first.wait_for()  # type: ignore[attr-defined]
    light = wait_for_looks(page, LIGHT_BG, LIGHT_TEXT)
    try:
        # the widget drawn in the light theme follows a switch to dark, without a re-run
        change_theme(page, "JupyterLab Dark")
        dark = wait_for_looks(page, DARK_BG, DARK_TEXT)
        assert dark["swatch"] != light["swatch"]
        page.screenshot(path=str(artifacts / "jupyterlab_dark_switch.png"))  # type: ignore[attr-defined]
    finally:
        change_theme(page, "JupyterLab Light")
    wait_for_looks(page, LIGHT_BG, LIGHT_TEXT)

    # the wheel over the graph scrolls the notebook until the graph is clicked (the op
    # clicked above engaged it: a click on the notebook's markdown lets go)
    page.locator(".jp-MarkdownCell").first.click()  # type: ignore[attr-defined]
    scroller = ".jp-NotebookPanel .jp-WindowedPanel-outer"
    canvas = page.locator(f'{ROOT} [data-testid="graph-canvas"]').first  # type: ignore[attr-defined]
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    scale = page.evaluate(f"document.querySelector('{ROOT}').__lens.scale")  # type: ignore[attr-defined]
    top = page.evaluate(f"document.querySelector('{scroller}').scrollTop")  # type: ignore[attr-defined]
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 60)  # type: ignore[attr-defined]
    page.mouse.wheel(0, 200)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "([sel, top]) => document.querySelector(sel).scrollTop > top", arg=[scroller, top]
    )
    assert page.evaluate(f"document.querySelector('{ROOT}').__lens.scale") == scale  # type: ignore[attr-defined]
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + 4, box["y"] + box["height"] - 4)  # type: ignore[attr-defined]
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 60)  # type: ignore[attr-defined]
    top = page.evaluate(f"document.querySelector('{scroller}').scrollTop")  # type: ignore[attr-defined]
    page.mouse.wheel(0, 200)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "([sel, s]) => document.querySelector(sel).__lens.scale < s", arg=[ROOT, scale]
    )
    assert page.evaluate(f"document.querySelector('{scroller}').scrollTop") == top  # type: ignore[attr-defined]
    assert page.errors == []  # type: ignore[attr-defined]


# ---- ablating an op from the inspector, in the real JupyterLab ----------------------------

BOTTOM = "rgb(68,1,84)"  # the difference ramp's zero
BANNER = f'{ROOT} [data-testid="ablation-banner"]'


def test_ablate_from_the_inspector_and_back_in_jupyterlab(
    lab: Lab, page: object, artifacts: Path
) -> None:
    open_demo_widget(lab, page, height=1000)
    kernel = Kernel(lab.connection_file())
    try:
        # an op of the second block's MLP: the embeddings and block 0 come before it
        target = kernel.run(
            f"print(next(n['id'] for n in {WIDGET}.graph['unrolled']['nodes'] if n['kind'] == "
            "'op' and n['module'].startswith('transformer.h.1.mlp')))"
        ).strip()
        kernel.run(f"{WIDGET}.selected = {target!r}")
        page.locator(f'{ROOT} [data-testid="ablate-button"]').first.click()  # type: ignore[attr-defined]
        page.locator(BANNER).first.wait_for(state="visible", timeout=60_000)  # type: ignore[attr-defined]
        text = page.locator(f'{ROOT} [data-testid="ablation-text"]').first.inner_text()  # type: ignore[attr-defined]
        assert f"{target} zeroed" in text
        assert kernel.run(f"print({WIDGET}.ablation.target)").strip() == target
        diffs = json.loads(
            kernel.run(
                "import json; "
                f"print(json.dumps({{d.label: d.max_abs for d in {WIDGET}.comparison}}))"
            )
        )
        page.wait_for_function(  # type: ignore[attr-defined]
            "([sel, id]) => document.querySelector(sel).__lens.overlayColor(id) !== null",
            arg=[ROOT, target],
            timeout=30_000,
        )
        shown = page.evaluate(f"document.querySelector('{ROOT}').__lens.visibleIds")  # type: ignore[attr-defined]
        colors = {
            i: page.evaluate(  # type: ignore[attr-defined]
                "([sel, id]) => document.querySelector(sel).__lens.overlayColor(id)", [ROOT, i]
            )
            for i in shown
            if diffs.get(i) is not None
        }
        upstream = [i for i in colors if diffs[i] == 0]
        downstream = [i for i in colors if diffs[i] > 0]
        assert upstream and downstream, (upstream, downstream)
        assert all(colors[i] == BOTTOM for i in upstream), colors
        assert all(colors[i] not in (None, BOTTOM) for i in downstream), colors
        page.screenshot(path=str(artifacts / "jupyterlab_ablation.png"))  # type: ignore[attr-defined]

        page.locator(f'{ROOT} [data-testid="ablation-back"]').first.click()  # type: ignore[attr-defined]
        page.locator(BANNER).first.wait_for(state="hidden", timeout=30_000)  # type: ignore[attr-defined]
        assert poll(lambda: kernel.run(f"print({WIDGET}.ablation)").strip(), "None") == "None"
    finally:
        kernel.close()
    assert page.errors == []  # type: ignore[attr-defined]
