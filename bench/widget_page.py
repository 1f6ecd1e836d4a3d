"""The page the widget bench drives: the built widget under a stand-in anywidget model,
in-page timers, and a kernel that answers with lens_widget's own request handler."""

from __future__ import annotations

import base64
import struct
import time
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from lens_widget.log.records import OpRecord
from lens_widget.widget import requests

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>lens_widget bench</title>
<style>body { margin: 0; padding: 16px; font-family: system-ui, sans-serif; }
#app { width: 1240px; }</style></head>
<body><div id="app"></div>
<script type="module">
  // A stand-in for anywidget's model: traits in a dict, requests to the Python kernel. The
  // graph is what the kernel syncs: lens_widget/widget/wire.py's bytes, as a DataView.
  const graph = new DataView(await (await fetch("./graph.bin")).arrayBuffer());
  const state = { graph, selected: "", view: "unrolled", expanded: [], status: "" };
  const listeners = new Map();
  const emit = (ev, ...a) => (listeners.get(ev) || []).slice().forEach((f) => f(...a));
  const model = {
    get: (k) => state[k],
    set: (k, v) => { const c = JSON.stringify(state[k]) !== JSON.stringify(v); state[k] = v;
                     if (c) emit(`change:${k}`, v); },
    save_changes: () => {},
    on: (ev, f) => { if (!listeners.has(ev)) listeners.set(ev, []); listeners.get(ev).push(f); },
    off: (ev, f) => listeners.set(ev, f ? (listeners.get(ev) || []).filter((g) => g !== f) : []),
    send: async (content) => {
      if (!content || content.type !== "request") return;
      const r = await window.__lensKernel(content);
      const views = r.buffers.map((b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        return new DataView(bytes.buffer);
      });
      emit("msg:custom", r.content, views);
    },
  };
  performance.mark("lens:start");
  const widget = (await import("./widget.js")).default;
  performance.mark("lens:module-loaded");
  const el = document.getElementById("app");
  window.__cleanup = widget.render({ model, el });
  window.__el = el;
</script></body></html>
"""

# Installed after load: arm() before a user action, done() resolves with the elapsed ms.
BENCH_JS = """
(TIMEOUT) => {
  const el = window.__el;
  const L = () => el.__lens;
  const plotDiv = () => el.querySelector('[data-testid="plot-main"]');
  window.__bench = {
    arm(kind) {
      const beforeLayouts = L().layoutCount;
      const beforePlot = plotDiv() ? plotDiv().data : undefined;
      let t0 = null;
      const onDown = () => { if (t0 === null) t0 = performance.now(); };
      document.addEventListener("pointerdown", onDown, { capture: true, once: true });
      this.done = new Promise((resolve, reject) => {
        const started = performance.now();
        const check = () => {
          let ok = false;
          if (t0 !== null) {
            if (kind === "layout")
              ok = L().layoutCount > beforeLayouts && L().layoutStatus === "idle";
            else if (kind === "plot") {
              const d = plotDiv() && plotDiv().data;
              ok = !!d && d !== beforePlot;
            }
          }
          if (ok) setTimeout(() => resolve(performance.now() - t0), 0);
          else if (performance.now() - started > TIMEOUT) reject(new Error(
            `no ${kind} change after ${TIMEOUT} ms (pointerdown seen: ${t0 !== null})`));
          else requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
      });
    },
    startFrames() {
      const frames = [];
      this.frames = frames;
      this.recording = true;
      const tick = (ts) => {
        frames.push([ts, L().lastFrameMs, L().drawnItems]);
        if (window.__bench.recording) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    },
    stopFrames() { this.recording = false; return this.frames; },
    // Before picking a metric: done() resolves with the ms from the picker's change event to
    // the first frame drawn after the probed items' overlay colors changed (values arrived).
    armRecolor(probe) {
      const colors = () => probe.map((id) => L().overlayColor(id)).join("|");
      const before = colors();
      const picker = el.querySelector('[data-testid="metric-picker"]');
      let t0 = null;
      picker.addEventListener("change", () => { t0 = performance.now(); },
                              { capture: true, once: true });
      this.done = new Promise((resolve, reject) => {
        const started = performance.now();
        const check = () => {
          if (t0 !== null && colors() !== before)
            setTimeout(() => resolve(performance.now() - t0), 0);
          else if (performance.now() - started > TIMEOUT) reject(new Error(
            `no recolor after ${TIMEOUT} ms (change seen: ${t0 !== null})`));
          else requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
      });
    },
  };
}
"""


class AnyNode(Mapping[str, Any]):
    """Records for a synthetic graph: every node id answers with the same real tensor."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def __getitem__(self, key: str) -> Any:
        return OpRecord(
            label=key,
            kind="op",
            func="synthetic",
            index=0,
            layer=key,
            shape=tuple(self.tensor.shape),
            activations=(self.tensor,),
        )

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


class Kernel:
    """Answers the page's requests with lens_widget's own request handler."""

    def __init__(self, records: Mapping[str, Any]) -> None:
        self.records = records
        self.handler_ms: list[float] = []
        self.metrics_ms: list[float] = []
        self.last_numel = 0
        self.op_ids: list[str] = []  # the graph's unrolled op ids: "metrics" answers for them

    def _metrics(self, params: object) -> requests.Answer:
        """Stand-in overlay values (a synthetic graph has no log): one per op, different
        for every metric, so that each pick recolors; the frontend's work is what is timed."""
        metric = requests.metric_name(params)
        values = [zlib.crc32(f"{metric}:{i}".encode()) % 1000 for i in self.op_ids]
        data = struct.pack(f"<{len(values)}f", *values)
        return {"metric": metric, "ids": self.op_ids}, [data]  # type: ignore[typeddict-item]

    def __call__(self, content: Any) -> dict[str, Any]:
        t0 = time.perf_counter()
        handlers = {
            "activation": lambda p: requests.activation(self.records, p),
            "metrics": self._metrics,
        }
        reply = requests.handle(content, handlers)
        spent = (time.perf_counter() - t0) * 1e3
        is_metrics = isinstance(content, dict) and content.get("method") == "metrics"
        (self.metrics_ms if is_metrics else self.handler_ms).append(spent)
        if reply is None:
            return {"content": None, "buffers": []}
        body, buffers = reply
        rec = self.records.get(content.get("params", {}).get("id"))
        if rec is not None and rec.activation is not None:
            self.last_numel = rec.activation.numel()
        return {
            "content": body,
            "buffers": [base64.b64encode(bytes(b)).decode("ascii") for b in buffers],
        }
