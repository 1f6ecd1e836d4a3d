"""The widget in headless Chromium: first paint, expand, toggle view, click to plot, panning.

The built ESM (lens_widget/static/widget.js) runs in a plain page with a stand-in anywidget
model; activation requests go to the real Python handler (lens_widget.widget.requests)
through `page.expose_function`, so "click to plot" includes the kernel-side reduction of the
tensor, the binary buffer and the Plotly draw. Graphs: synthetic ViT-like payloads
(model_zoo/synthetic_payload.py) of ~500-10000 ops whose every node answers with a
1M-element tensor, and a real traced model; for 100,000 ops first paint only. The page gets
the graph as the kernel syncs it (lens_widget/widget/wire.py's bytes), so first paint
includes decoding it.

Timing is taken inside the page: from the `pointerdown` of Playwright's real mouse click to
the first animation frame after the widget reports the new state (a layout applied, or a
new plot), plus one task so that frame's drawing is done: resolution about one frame.
"""

from __future__ import annotations

import argparse
import json
import pathlib
from collections.abc import Callable
from typing import Any

import torch
from playwright.sync_api import sync_playwright
from transformers import GPT2Config, GPT2LMHeadModel

import lens_widget
from lens_widget.widget import wire
from lens_widget.widget.payload import build_payload
from model_zoo import gpt2
from model_zoo.synthetic_payload import make_payload

from .chromium import CHROMIUM, CHROMIUM_ARGS
from .measure import median
from .widget_actions import (
    STEP_TIMEOUT_MS,
    on_screen,
    open_in_turn,
    timed_button,
    timed_click,
    timed_pan,
    timed_recolor,
    wait_idle,
)
from .widget_page import BENCH_JS, PAGE, AnyNode, Kernel

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDGET_JS = ROOT / "lens_widget" / "static" / "widget.js"

BASE = "http://lens.bench/"


def serve_files(page: Any, files: dict[str, tuple[bytes, str]]) -> None:
    """The page's requests under BASE answered from `files` (name -> (body, content type))."""

    def serve(route: Any) -> None:
        key = route.request.url[len(BASE) :].split("?")[0] or "index.html"
        body, ctype = files.get(key, (b"not found", "text/plain"))
        route.fulfill(status=200 if key in files else 404, body=body, content_type=ctype)

    page.route(BASE + "**", serve)


# In-page marks, ms from lens:start (missing ones absent): first paint and what it is made of.
_MARKS_JS = """() => Object.fromEntries(['lens:start', 'lens:module-loaded', 'lens:render-start',
  'lens:graph-decoded', 'lens:layout-start', 'lens:layout-done', 'lens:first-paint']
  .map(n => [n, performance.getEntriesByName(n)[0]]).filter(([, e]) => e)
  .map(([n, e]) => [n, e.startTime]))"""


def _open_page(
    browser: Any,
    name: str,
    payload: dict[str, Any],
    kernel: Kernel,
    widget_js: pathlib.Path = WIDGET_JS,
) -> tuple[Any, Any, dict[str, Any], list[str]]:
    """A page serving the widget and `payload` as wire bytes; the row's size figures."""
    graph = wire.encode(payload)
    files = {
        "index.html": (PAGE.encode(), "text/html"),
        "widget.js": (widget_js.read_bytes(), "text/javascript"),
        "graph.bin": (graph, "application/octet-stream"),
    }
    context = browser.new_context(device_scale_factor=1, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    kernel.op_ids = [n["id"] for n in payload["unrolled"]["nodes"] if n["kind"] == "op"]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.expose_function("__lensKernel", kernel)

    serve_files(page, files)
    row: dict[str, Any] = {
        "graph": name,
        "nodes": len(payload["unrolled"]["nodes"]),
        "ops": payload.get("nOps"),
        "payload_json_bytes": len(json.dumps(payload)),
        "payload_wire_bytes": len(graph),
    }
    return context, page, row, errors


def _first_paint(page: Any, row: dict[str, Any]) -> None:
    """Loads the page until first paint; the marks on the way go in `row`, also on a timeout."""
    try:
        page.goto(BASE + "index.html")
        page.wait_for_function(
            "() => performance.getEntriesByName('lens:first-paint').length > 0",
            timeout=STEP_TIMEOUT_MS,
        )
    finally:
        marks = page.evaluate(_MARKS_JS)
        start = marks.get("lens:start", 0.0)

        def span(a: str, b: str) -> float | None:
            return marks[b] - marks[a] if a in marks and b in marks else None

        row["first_paint_ms"] = span("lens:start", "lens:first-paint")
        row["module_load_ms"] = span("lens:start", "lens:module-loaded")
        row["decode_ms"] = span("lens:render-start", "lens:graph-decoded")
        row["layout_ms"] = span("lens:layout-start", "lens:layout-done")
        row["marks_ms"] = {k: round(v - start, 1) for k, v in marks.items()}


# Plotly is evaluated when the page is next idle after first paint (js/src/panel/plotlyLoader.ts):
# ~0.5 s in one task, which delayed whichever click it fell on (opening the ×24 stack: 49 ->
# ~500 ms in one run, the block after it in another). Timed steps start once it is done.
_PLOTLY_MARK = "lens:plotly-loaded"
_PLOTLY_UNMARKED_WAIT_MS = 2500  # a build from before the mark: the idle callback's 1 s and more


def wait_plotly(page: Any, widget_js: pathlib.Path = WIDGET_JS) -> None:
    """Waits until the widget has evaluated Plotly (the mark, or a while for older builds)."""
    if _PLOTLY_MARK.encode() not in widget_js.read_bytes():
        page.wait_for_timeout(_PLOTLY_UNMARKED_WAIT_MS)
        return
    page.wait_for_function(
        f"() => performance.getEntriesByName('{_PLOTLY_MARK}').length > 0", timeout=STEP_TIMEOUT_MS
    )


def _expand_then_plot(page: Any, row: dict[str, Any]) -> None:
    """Opens the first collapsed box on screen (a chunk of blocks on a huge graph), then one
    inside it, and clicks an op there until its plot is drawn: expand_ms, click_to_plot_ms."""
    wait_idle(page)
    wait_plotly(page)
    page.evaluate(BENCH_JS, STEP_TIMEOUT_MS)
    expands = []
    for _ in range(2):
        ids = page.evaluate("() => window.__el.__lens.visibleIds")
        groups = on_screen(page, [i for i in ids if i.startswith("@")], limit=1)
        if not groups:
            break
        expands.append(timed_click(page, "layout", *groups[0][1].values()))
        wait_idle(page)
    row["expand_samples_ms"] = expands
    row["expand_ms"] = median(expands) if expands else None
    ids = page.evaluate("() => window.__el.__lens.visibleIds")
    ops = on_screen(page, [i for i in ids if not i.startswith("@")], limit=1)
    row["click_to_plot_ms"] = timed_click(page, "plot", *ops[0][1].values()) if ops else None


def _measure_first_paint(
    browser: Any, name: str, payload: dict[str, Any], log: Callable[[str], None], kernel: Kernel
) -> dict[str, Any]:
    """First paint, one expand and one click to plot: for graphs too big to click through in
    the bench's time (Expand all, panning)."""
    context, page, row, errors = _open_page(browser, name, payload, kernel)
    try:
        _first_paint(page, row)
        row["visible_at_first_paint"] = page.evaluate("() => window.__el.__lens.visibleCount")
        _expand_then_plot(page, row)
    except Exception as err:
        row["error"] = f"{type(err).__name__}: {err}"
        row["banner"] = page.evaluate(  # a layout that failed says so there
            "() => { const b = document.querySelector('[data-testid=error-banner]');"
            " return b && !b.hidden ? b.textContent : null; }"
        )
    if errors:
        row["page_errors"] = errors[:5]
    context.close()
    keys = ("decode_ms", "layout_ms", "expand_ms", "click_to_plot_ms")
    parts = ", ".join(f"{k[:-3]} {row[k]:.0f}" for k in keys if row.get(k))
    log(f"  {name}: first paint {row['first_paint_ms'] or '-'} ms ({parts}) {row.get('error', '')}")
    return row


def _measure_page(
    browser: Any,
    name: str,
    payload: dict[str, Any],
    kernel: Kernel,
    pick_op: Callable[[list[str]], list[str]],
    log: Callable[[str], None],
    widget_js: pathlib.Path = WIDGET_JS,
    open_first: list[str] | None = None,
) -> dict[str, Any]:
    """open_first: modules to open (timed, in turn) right after the first paint."""
    context, page, row, errors = _open_page(browser, name, payload, kernel, widget_js)
    try:
        _first_paint(page, row)
        wait_idle(page)
        wait_plotly(page, widget_js)
        page.evaluate(BENCH_JS, STEP_TIMEOUT_MS)
        row["visible_at_first_paint"] = page.evaluate("() => window.__el.__lens.visibleCount")
        row["first_paint_zoom"] = page.evaluate("() => window.__el.__lens.scale")
        # visible sets laid out by now (the first view's search), in the worker, worker warm-ups
        row["layout_runs"] = page.evaluate("() => window.__el.__lens.layoutRuns ?? null")
        if open_first:
            row["open_ms"] = open_in_turn(page, open_first)
            page.click('[data-testid="collapse-all"]')
            wait_idle(page)

        # Before any selection: with a node selected, the view switch does not re-lay out
        # (frontend bug reported to the lead).
        recolor = timed_recolor(page, kernel)
        row.update({f"recolor_{k}": v for k, v in recolor.items()})
        row["toggle_ms"] = timed_button(page, "view-rolled")
        row["toggle_back_ms"] = timed_button(page, "view-unrolled")

        plots = []
        clicked: set[str] = set()
        for _ in range(3):  # positions move when the inspector opens: look again each time
            ids = page.evaluate("() => window.__el.__lens.visibleIds")
            fresh = [i for i in ids if not i.startswith("@") and i not in clicked]
            ops = on_screen(page, pick_op(fresh))
            if not ops:
                break
            op, pos = ops[0]
            clicked.add(op)
            plots.append(timed_click(page, "plot", pos["x"], pos["y"]))
        row["click_to_plot_ms"] = median(plots) if plots else None
        row["click_samples_ms"] = plots
        row["plotted_numel"] = kernel.last_numel
        row["kernel_handler_ms"] = median(kernel.handler_ms)

        pan = timed_pan(page)
        row.update({f"pan_default_{k}": v for k, v in pan.items()})

        page.click('[data-testid="fit"]')
        wait_idle(page)
        expands = []
        for _ in range(3):
            ids = page.evaluate("() => window.__el.__lens.visibleIds")
            groups = on_screen(page, [i for i in ids if i.startswith("@")])
            if not groups:
                break
            _, pos = groups[0]
            expands.append(timed_click(page, "layout", pos["x"], pos["y"]))
        row["expand_ms"] = median(expands) if expands else None
        row["expand_samples_ms"] = expands

        row["expand_all_ms"] = timed_button(page, "expand-all")
        page.click('[data-testid="fit"]')
        wait_idle(page)
        recolor = timed_recolor(page, kernel)  # every op drawn: the most items to color
        row.update({f"recolor_all_{k}": v for k, v in recolor.items()})
        pan = timed_pan(page)
        row.update(
            {
                f"pan_frame_{k.split('_', 1)[1]}" if k.startswith("frame_") else f"pan_{k}": v
                for k, v in pan.items()
            }
        )
    except Exception as err:
        row["error"] = f"{type(err).__name__}: {err}"
    if errors:
        row["page_errors"] = errors[:5]
    context.close()
    done = ", ".join(
        f"{k} {row[k]:.2f}" if k == "first_paint_zoom" else f"{k} {row[k]:.0f}"
        for k in (
            "first_paint_ms",
            "first_paint_zoom",
            "expand_ms",
            "toggle_ms",
            "recolor_ms",
            "recolor_all_ms",
            "click_to_plot_ms",
            "pan_frame_median_ms",
        )
        if isinstance(row.get(k), (int, float))
    )
    opened = row.get("open_ms") or {}
    done += "".join(f", open {k} {v:.0f}" for k, v in opened.items() if v is not None)
    log(f"  {name}: {done}{' ERROR ' + row['error'] if 'error' in row else ''}")
    return row


def _real_model(quick: bool) -> tuple[str, dict[str, Any], Kernel]:
    case = gpt2("tiny" if quick else "bench")
    with torch.no_grad():
        log = lens_widget.trace(case.model, case.args, case.kwargs, save="all")
    records = {r.label: r for r in log.nodes}
    return f"real {case.name}", build_payload(log), Kernel(records)


GPT2_FOLDED = "gpt2-24L folded"


def gpt2_blocks_payload(n_layer: int) -> tuple[dict[str, Any], Kernel]:
    """GPT-2 with `n_layer` blocks of width 64 (random weights): its repeated blocks fold."""
    torch.manual_seed(0)
    config = GPT2Config(n_layer=n_layer, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                        bos_token_id=1, eos_token_id=2)  # fmt: skip
    ids = torch.randint(0, 500, (1, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        log = lens_widget.trace(GPT2LMHeadModel(config).eval(), (ids,), save="all")
    return build_payload(log), Kernel({r.label: r for r in log.nodes})


def bench_gpt2_folded(
    browser: Any,
    log: Callable[[str], None],
    n_layer: int = 24,
    widget_js: pathlib.Path = WIDGET_JS,
    folded: bool = True,
) -> dict[str, Any]:
    """First paint, then opening the stack of blocks and one block; `folded=False` for a build
    of the widget from before repeated blocks were folded (`widget_js`): it opens the block."""
    payload, kernel = gpt2_blocks_payload(n_layer)
    block = "@transformer.h.0:1"
    steps = [f"@transformer.h.0×{n_layer}", block] if folded else [block]
    name = GPT2_FOLDED.replace("24L", f"{n_layer}L") + ("" if folded else " (before folding)")
    return _measure_page(
        browser, name, payload, kernel, lambda ids: ids, log, widget_js=widget_js, open_first=steps
    )


def bench_recolor(browser: Any, log: Callable[[str], None], n_ops: int = 5000) -> dict[str, Any]:
    """Only the recolor figures of the synthetic `n_ops` graph: first view, then all expanded."""
    payload = make_payload(target_ops=n_ops)
    kernel = Kernel({})
    context, page, row, errors = _open_page(browser, f"synthetic {n_ops}", payload, kernel)
    try:
        _first_paint(page, row)
        wait_idle(page)
        wait_plotly(page)
        page.evaluate(BENCH_JS, STEP_TIMEOUT_MS)
        row.update({f"recolor_{k}": v for k, v in timed_recolor(page, kernel).items()})
        page.click('[data-testid="expand-all"]')
        wait_idle(page)
        page.click('[data-testid="fit"]')
        wait_idle(page)
        row.update({f"recolor_all_{k}": v for k, v in timed_recolor(page, kernel).items()})
    finally:
        context.close()
    if errors:
        row["page_errors"] = errors[:5]
    log(
        f"  {row['graph']}: recolor {row['recolor_ms']:.0f} ms ({row['recolor_visible']} drawn), "
        f"all expanded {row['recolor_all_ms']:.0f} ms ({row['recolor_all_visible']} drawn); "
        f"kernel stand-in {row['recolor_all_kernel_ms']:.1f} ms"
    )
    return row


def bench_widget(quick: bool, log: Callable[[str], None] = print) -> dict[str, Any]:
    if not WIDGET_JS.exists():
        return {"skipped": f"{WIDGET_JS.relative_to(ROOT)} missing: run `npm run build`"}
    if not pathlib.Path(CHROMIUM).exists():
        return {"skipped": f"no chromium at {CHROMIUM}"}
    big = torch.randn(1, 1000, 1000, generator=torch.Generator().manual_seed(0))
    sizes = [200] if quick else [500, 2000, 5000, 10000]
    first_paint_sizes = [] if quick else [100_000]
    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for n in sizes:
                payload = make_payload(target_ops=n)
                rows.append(
                    _measure_page(
                        browser,
                        f"synthetic {n}",
                        payload,
                        Kernel(AnyNode(big)),
                        lambda ids: ids,
                        log,
                    )
                )
            for n in first_paint_sizes:
                payload = make_payload(target_ops=n)
                kernel = Kernel(AnyNode(big))
                rows.append(_measure_first_paint(browser, f"synthetic {n}", payload, log, kernel))
                del payload
            name, payload, kernel = _real_model(quick)

            def biggest_first(ids: list[str], k: Kernel = kernel) -> list[str]:
                def numel(i: str) -> int:
                    rec = k.records.get(i)
                    return rec.activation.numel() if rec is not None and rec.saved else -1

                return sorted((i for i in ids if numel(i) > 0), key=numel, reverse=True)

            rows.append(_measure_page(browser, name, payload, kernel, biggest_first, log))
            rows.append(bench_gpt2_folded(browser, log, n_layer=4 if quick else 24))
        finally:
            browser.close()
    return {"rows": rows, "widget_js_bytes": WIDGET_JS.stat().st_size}


def main() -> None:
    """Only the folded GPT-2 row, once: `python -m bench.widget_bench`; with
    `--widget-js OLD.js --before-folding`, the same row on an older build; with
    `--recolor 5000`, the recolor figures of the synthetic 5000-op graph; with
    `--first-paint 100000`, the first paint row of a synthetic graph of that many ops."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--widget-js", type=pathlib.Path, default=WIDGET_JS)
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--before-folding", action="store_true", help="--widget-js is an older build")
    p.add_argument(
        "--recolor", type=int, metavar="N_OPS", help="instead: recolor a synthetic N_OPS graph"
    )
    p.add_argument("--first-paint", type=int, metavar="OPS", help="the first-paint row instead")
    args = p.parse_args()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            if args.recolor:
                row = bench_recolor(browser, print, args.recolor)
            elif args.first_paint:
                kernel = Kernel(AnyNode(torch.randn(1, 1000, 1000)))
                payload = make_payload(target_ops=args.first_paint)
                name = f"synthetic {args.first_paint}"
                row = _measure_first_paint(browser, name, payload, print, kernel)
            else:
                row = bench_gpt2_folded(
                    browser, print, args.layers, args.widget_js, folded=not args.before_folding
                )
        finally:
            browser.close()
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
