"""The monitor view at issue #23's size: a synthetic StepHistory of 10,000 ops x 200 steps.

`python -m bench.monitor_widget_bench [--ops 10000] [--steps 200]`. The graph is a traced chain of
`--ops` ops (its structure, no values); every step holds random statistics for its ops. The
built widget runs in headless Chromium under a stand-in model whose requests go to the
widget's own handler (LensWidget.from_monitor). Rows:

- first paint: page start to the graph's first frame, and to the monitor's first step shown
  (its column and ranked list arrived);
- slider move: from the slider's input event to the first frame drawn in the new step's
  colors (a statistic picked), median over several moves;
- click: from a click on a ranked op to its statistics over the steps plotted;
- kernel ms and bytes per request: one step's column, one op's series;
- the step listener's cost on the training thread, per traced step.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any

import numpy as np
from playwright.sync_api import sync_playwright

import lens_widget as lw
from lens_widget.capture.monitor.monitor import without_values
from lens_widget.log.monitor.step_history import STAT_NAMES, OpIndex, StepHistory, StepStats
from lens_widget.widget import wire
from model_zoo.torch_nn import chain

from .chromium import CHROMIUM, CHROMIUM_ARGS
from .measure import median
from .widget_bench import BASE, WIDGET_JS, serve_files
from .widget_page import PAGE

MONITOR_PAGE = PAGE.replace(
    'status: "" };',
    'status: "", step: -1, monitor: await (await fetch("./monitor.json")).json() };',
)
assert MONITOR_PAGE != PAGE
TIMEOUT_MS = 60_000
SHOWN = "document.querySelector('[data-testid=monitor]').dataset.shown || ''"


def synthetic_history(n_ops: int, n_steps: int) -> StepHistory:
    """The structure of a traced chain of ~`n_ops` ops, with `n_steps` steps of random
    statistics; a NaN appears at step n_steps // 2 in one op."""
    case = chain(n_ops)
    log = lw.trace(case.model, case.args, save=None)
    ops = log.ops
    index = OpIndex(
        tuple(op.label for op in ops), tuple(op.module for op in ops), tuple(op.func for op in ops)
    )
    rng = np.random.default_rng(0)
    history = StepHistory(structure=without_values(log))
    base = rng.normal(size=(len(ops), len(STAT_NAMES)))
    for step in range(n_steps):
        act = base + 0.01 * step * rng.normal(size=base.shape)
        act[:, STAT_NAMES.index("nan")] = 0
        act[:, STAT_NAMES.index("inf")] = 0
        if step >= n_steps // 2:
            act[len(ops) // 2, STAT_NAMES.index("nan")] = 3
        grad = act * 0.1
        history.add(StepStats(step, index, act, grad))
    return history


class MonitorKernel:
    """Answers the page with the widget's own handler; times each request kind."""

    def __init__(self, widget: lw.LensWidget) -> None:
        self.widget = widget
        self.ms: dict[str, list[float]] = {}
        self.bytes: dict[str, list[int]] = {}

    def __call__(self, content: Any) -> dict[str, Any]:
        sent: list[tuple[dict[str, Any], list[Any]]] = []
        self.widget.send = lambda msg, buffers=None: sent.append((msg, list(buffers or [])))  # type: ignore[method-assign]
        t0 = time.perf_counter()
        try:
            self.widget._on_msg(self.widget, content, [])
        finally:
            del self.widget.send
        method = content.get("method", "?") if isinstance(content, dict) else "?"
        self.ms.setdefault(method, []).append((time.perf_counter() - t0) * 1e3)
        msg, buffers = sent[0]
        size = len(json.dumps(msg)) + sum(len(bytes(b)) for b in buffers)
        self.bytes.setdefault(method, []).append(size)
        return {
            "content": msg,
            "buffers": [base64.b64encode(bytes(b)).decode("ascii") for b in buffers],
        }


def _slide(page: Any, index: int) -> float:
    """ms from the slider's input event to the frame drawn in the new step's colors (the
    overlay recolors synchronously when the step's column arrives, `dataset.shown`)."""
    return float(
        page.evaluate(
            """([i, timeout]) => new Promise((resolve, reject) => {
              const el = window.__el;
              const root = el.querySelector('[data-testid=monitor]');
              const s = el.querySelector('[data-testid=monitor-slider]');
              const t0 = performance.now();
              s.value = String(i);
              s.dispatchEvent(new Event('input'));
              const check = () => {
                if ((root.dataset.shown || '').startsWith(i + '|'))
                  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0)));
                else if (performance.now() - t0 > timeout) reject(new Error('no recolor'));
                else requestAnimationFrame(check);
              };
              requestAnimationFrame(check);
            })""",
            [index, TIMEOUT_MS],
        )
    )


def _click_row(page: Any, row: int) -> float:
    """ms from a click on ranked op `row` to its series plotted."""
    return float(
        page.evaluate(
            """([row, timeout]) => new Promise((resolve, reject) => {
              const el = window.__el;
              const div = el.querySelector('[data-testid=monitor-series]');
              const before = div.data;
              const b = el.querySelectorAll('[data-testid=monitor-ranked] li button')[row];
              const t0 = performance.now();
              b.click();
              const check = () => {
                if (div.data && div.data !== before)
                  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0)));
                else if (performance.now() - t0 > timeout) reject(new Error('no plot'));
                else requestAnimationFrame(check);
              };
              requestAnimationFrame(check);
            })""",
            [row, TIMEOUT_MS],
        )
    )


def bench_monitor(n_ops: int = 10_000, n_steps: int = 200, log: Any = print) -> dict[str, Any]:
    t0 = time.perf_counter()
    history = synthetic_history(n_ops, n_steps)
    spent = time.perf_counter() - t0
    log(f"history: {len(history.steps[0].ops)} ops x {n_steps} steps in {spent:.1f} s")
    t0 = time.perf_counter()
    widget = lw.LensWidget.from_monitor(history)
    widget_ms = (time.perf_counter() - t0) * 1e3
    kernel = MonitorKernel(widget)
    files = {
        "index.html": (MONITOR_PAGE.encode(), "text/html"),
        "widget.js": (WIDGET_JS.read_bytes(), "text/javascript"),
        "graph.bin": (wire.encode(widget.graph), "application/octet-stream"),
        "monitor.json": (json.dumps(widget.monitor).encode(), "application/json"),
    }
    row: dict[str, Any] = {
        "ops": len(history.steps[0].ops),
        "steps": n_steps,
        "from_monitor_ms": round(widget_ms, 1),
    }
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1300, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.expose_function("__lensKernel", kernel)

        serve_files(page, files)
        page.goto(BASE + "index.html")
        page.wait_for_function(
            "() => performance.getEntriesByName('lens:first-paint').length > 0", timeout=TIMEOUT_MS
        )
        page.wait_for_function(f"() => ({SHOWN}).startsWith('{n_steps - 1}|')", timeout=TIMEOUT_MS)
        row["first_paint_ms"] = page.evaluate(
            "() => performance.getEntriesByName('lens:first-paint')[0].startTime"
            " - performance.getEntriesByName('lens:start')[0].startTime"
        )
        row["monitor_ready_ms"] = page.evaluate(
            "() => performance.now() - performance.getEntriesByName('lens:start')[0].startTime"
        )  # an upper bound: polled
        page.select_option("[data-testid=monitor-stat]", "mean")
        page.wait_for_function(f"() => ({SHOWN}).includes('|mean|')", timeout=TIMEOUT_MS)
        slides = [_slide(page, i) for i in (10, 50, 90, 130, 170, 20, 60, 100, 140, 180)]
        row["first_paint_ms"] = round(row["first_paint_ms"], 1)
        row["monitor_ready_ms"] = round(row["monitor_ready_ms"], 1)
        row["slider_ms"] = round(median(slides), 1)
        row["slider_samples_ms"] = [round(s, 1) for s in slides]
        clicks = [_click_row(page, r) for r in (0, 1, 2, 3, 4)]
        row["click_to_series_ms"] = round(median(clicks), 1)
        row["click_samples_ms"] = [round(c, 1) for c in clicks]
        row["errors"] = errors
        browser.close()
    for method in ("monitorStep", "monitorSeries"):
        row[f"{method}_kernel_ms"] = round(median(kernel.ms.get(method, [0.0])), 2)
        row[f"{method}_bytes"] = int(median([float(b) for b in kernel.bytes.get(method, [0])]))
    row["first_monitorStep_bytes"] = kernel.bytes["monitorStep"][0]  # with the op ids
    row["listener_ms_per_step"] = round(_listener_ms(history, widget), 3)
    return row


def _listener_ms(history: StepHistory, widget: lw.LensWidget, n: int = 20) -> float:
    """What the training thread pays per traced step for a shown widget: the step listener
    (the `monitor` trait's new value; no comm here, so not its send)."""
    last = history.steps[-1]
    times = []
    for i in range(n):
        stats = StepStats(last.step + 1 + i, last.ops, last.activation, last.gradient)
        history.add(stats)
        t0 = time.perf_counter()
        widget._monitor_added(stats)
        times.append((time.perf_counter() - t0) * 1e3)
    return median(times)


def main() -> None:
    """The monitor view's first paint, slider move and click at 10,000 ops x 200 steps."""
    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--ops", type=int, default=10_000)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    row = bench_monitor(args.ops, args.steps)
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
