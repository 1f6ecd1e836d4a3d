"""Sharing a trace: the size of the standalone HTML page and of a notebook's saved widget state.

    python -m bench.share_bench            # GPT-2 12 layers (seq 128), a 5,000-op model
    python -m bench.share_bench --quick    # tiny GPT-2, a 200-op model: checks the harness

Figures:
- the HTML page of GPT-2 small (`ModelLog.to_html`, default budget): file size and its parts,
  activation views kept and the cap they were pooled to, seconds to write it, and seconds from
  opening it from disk in Chromium (network blocked) to the first drawn graph;
- the bytes a notebook saved with widget state grows by per LensWidget: nbclient runs the same
  notebook with 0, 1 and 2 widgets of one model and saves it (the state nbclient stores is the
  one JupyterLab saves with "Save Widget State Automatically"), and one widget's state is split
  into its parts (the bundle in `_esm`, the `graph` trait, the rest).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pathlib
import tempfile
import time
from typing import Any

import nbformat
from nbclient import NotebookClient
from playwright.sync_api import sync_playwright

import lens_widget as lw
from lens_widget.log.model_log import DEFAULT_HTML_BYTES
from lens_widget.widget import wire
from lens_widget.widget.html_export import page_blocks
from model_zoo import gpt2

from .chromium import CHROMIUM, CHROMIUM_ARGS

ROOT = pathlib.Path(__file__).resolve().parents[1]
STATE_MIME = "application/vnd.jupyter.widget-state+json"
# The notebook: one cell tracing the model, then one cell per widget.
SETUP = """\
import lens_widget as lw
from model_zoo import chain
case = chain({n_ops})
log = lw.trace(case.model, case.args)"""
WIDGET = "lw.LensWidget.from_log(log)"


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


# ---- the standalone HTML page --------------------------------------------------------------


def html_page(size: str, out: pathlib.Path) -> dict[str, Any]:
    case = gpt2(size)  # type: ignore[arg-type]
    log = lw.trace(case.model, case.args, case.kwargs)
    t0 = time.perf_counter()
    path = log.to_html(out / "gpt2.html")
    write_s = time.perf_counter() - t0
    text = path.read_text(encoding="utf-8")
    blocks = page_blocks(text)
    views = json.loads(blocks["views"])
    parts = {name: len(_block_text(text, name)) for name in ("bundle", "state", "views", "values")}
    return {
        "model": case.description,
        "ops": len(log.ops),
        "max_bytes": DEFAULT_HTML_BYTES,
        "file_bytes": path.stat().st_size,
        "parts_bytes": parts,
        "graph_json_bytes": len(json.dumps(_page_graph(json.loads(blocks["state"])))),
        "views_kept": len(views["views"]),
        "views_total": views["total"],
        "pooled_to_values": views["cap"],
        "write_s": round(write_s, 2),
        "first_paint_from_disk_s": _first_paint(path),
    }


def _block_text(text: str, name: str) -> str:
    start = text.index(f'id="lens-{name}">') + len(f'id="lens-{name}">')
    return text[start : text.index("</script>", start)]


def _first_paint(path: pathlib.Path) -> float | None:
    """Seconds from navigation to the first drawn graph, opened from disk, network blocked."""
    if not pathlib.Path(CHROMIUM).exists():
        return None
    url = path.resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**", lambda r: r.continue_() if r.request.url == url else r.abort())
        page.goto(url)
        page.wait_for_function(
            "() => performance.getEntriesByName('lens:first-paint').length > 0", timeout=120_000
        )
        ms = page.evaluate("() => performance.getEntriesByName('lens:first-paint')[0].startTime")
        browser.close()
    return round(ms / 1000, 2)


# ---- a notebook's saved widget state ---------------------------------------------------------


def _saved_notebook(n_ops: int, widgets: int, out: pathlib.Path) -> pathlib.Path:
    cells = [nbformat.v4.new_code_cell(SETUP.format(n_ops=n_ops))]
    cells += [nbformat.v4.new_code_cell(WIDGET) for _ in range(widgets)]
    nb = nbformat.v4.new_notebook(cells=cells)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "JUPYTER_CONFIG_DIR": str(out / "config"),
    }
    client = NotebookClient(nb, kernel_name="python3", timeout=900, store_widget_state=True)
    client.execute(env=env)  # the kernel imports this checkout's lens_widget and bench
    path = out / f"widgets{widgets}.ipynb"
    nbformat.write(nb, path)
    return path


def _page_graph(saved: dict[str, Any]) -> Any:
    """The graph of a page's saved traits: a [path, base64] buffer of wire.py's bytes."""
    (data,) = [data for path, data in saved["buffers"] if path == ["graph"]]
    return wire.decode(base64.b64decode(data))


def notebook_growth(n_ops: int, out: pathlib.Path) -> dict[str, Any]:
    sizes = {n: _saved_notebook(n_ops, n, out).stat().st_size for n in (0, 1, 2)}
    nb = nbformat.read(out / "widgets1.ipynb", as_version=4)
    states = nb.metadata["widgets"][STATE_MIME]["state"]
    saved = next(s for s in states.values() if wire.saved_graph(s) is not None)
    lens_state, graph = saved["state"], wire.saved_graph(saved)
    (graph_buffer,) = [b for b in saved["buffers"] if b["path"] == ["graph"]]

    def without(holder: dict[str, Any], key: str) -> int:
        """Bytes the saved notebook takes with `holder[key]` emptied (nbformat's indent)."""
        kept = holder[key]
        holder[key] = type(kept)()
        try:
            return len(nbformat.writes(nb).encode())
        finally:
            holder[key] = kept

    whole = len(nbformat.writes(nb).encode())
    esm = whole - without(lens_state, "_esm")
    graph_bytes = whole - without(graph_buffer, "data")
    return {
        "model": f"chain({n_ops}): {graph['nOps']} ops, {len(graph['unrolled']['nodes']):,} nodes",
        "notebook_bytes": sizes,
        "per_widget_bytes": (sizes[2] - sizes[0]) // 2,
        "first_widget_bytes": sizes[1] - sizes[0],
        "state_parts_bytes": {
            "_esm (bundle)": esm,
            "graph": graph_bytes,
            "the rest": sizes[1] - sizes[0] - esm - graph_bytes,
        },
        "graph_compact_json_bytes": len(json.dumps(graph, separators=(",", ":"))),
    }


# ---- report ----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> str:
    h, n = results["html"], results["notebook"]
    parts = ", ".join(f"{k} {_mb(v)}" for k, v in h["parts_bytes"].items())
    lines = [
        f"HTML page, {h['model']} ({h['ops']:,} ops), max_bytes {_mb(h['max_bytes'])}:",
        f"  file {_mb(h['file_bytes'])} ({parts}; base64 of gzip)",
        f"  graph JSON {_mb(h['graph_json_bytes'])} before gzip",
        f"  activation views {h['views_kept']:,} of {h['views_total']:,}"
        + (f", pooled to <= {h['pooled_to_values']:,} values" if h["pooled_to_values"] else ""),
        f"  written in {h['write_s']} s; first paint from disk {h['first_paint_from_disk_s']} s",
        f"Notebook saved with widget state, {n['model']}:",
        "  file by widgets: " + ", ".join(f"{k}: {_mb(v)}" for k, v in n["notebook_bytes"].items()),
        f"  grows by {_mb(n['per_widget_bytes'])} per widget "
        + "("
        + ", ".join(f"{k} {_mb(v)}" for k, v in n["state_parts_bytes"].items())
        + f"; the graph as compact JSON would be {_mb(n['graph_compact_json_bytes'])})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="tiny models (checks the harness)")
    p.add_argument("--ops", type=int, default=None, help="ops of the notebook's model")
    p.add_argument("--json", type=pathlib.Path, default=None, help="also write figures here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        results = {
            "html": html_page("tiny" if args.quick else "bench", out),
            "notebook": notebook_growth(args.ops or (200 if args.quick else 5000), out),
        }
    print(report(results), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
