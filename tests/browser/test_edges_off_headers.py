"""Edges and their labels keep off module titles: on real traced models (an LSTM with an
embedding, the same with its CrossEntropyLoss in a section, a small random GPT-2 unrolled and
rolled), with modules expanded, no edge as drawn passes through the text of any expanded
module's header, and no edge label covers it.

Measured in the page: each header's text box from the canvas's own text metrics at the place
and font drawNodes.ts draws it; each edge sampled every pixel (getPointAtLength) along its
path as drawn (the debug hook's edgePaths(): drawEdges.ts's own path calls as SVG data); each
label's box from the debug hook (the placement drawEdges.ts uses).
"""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import lens, open_widget, wait_idle

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from torch import nn  # noqa: E402

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402

# In the page: every header text box, every edge sample inside one, every label over one.
MEASURE = """() => {
  const l = window.__el.__lens;
  const g = l.sceneGeometry();
  const FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace";
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.textBaseline = "middle";
  // drawBoxes: "▾ " + class at 600 11px from x + 8, then the address at 10px, on y + 11.5
  const heads = g.boxes.map((b) => {
    const [cls, addr] = l.headerLines ? l.headerLines(b.key) : l.itemLines("@" + b.key);
    ctx.font = `600 11px ${FONT}`;
    const lead = ctx.measureText("▾ " + cls + "  ");
    const big = ctx.measureText("▾ " + cls);
    ctx.font = `10px ${FONT}`;
    const small = ctx.measureText(addr);
    const cy = b.y + 11.5;
    return {
      key: b.key, text: cls, x0: b.x + 8, x1: b.x + 8 + lead.width + small.width,
      y0: cy - Math.max(big.actualBoundingBoxAscent, small.actualBoundingBoxAscent),
      y1: cy + Math.max(big.actualBoundingBoxDescent, small.actualBoundingBoxDescent),
    };
  });
  const inside = (h, x, y) => x > h.x0 && x < h.x1 && y > h.y0 && y < h.y1;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  document.body.append(svg);
  const crossings = [];
  // the canvas's own path calls as SVG path data; a build without that hook: the same path
  // as its drawEdges.ts smoothed it (a quadratic over each corner, between segment middles)
  const drawn = l.edgePaths ? l.edgePaths() : g.edges.map((e) => {
    const p = e.pts;
    let d = `M${p[0]},${p[1]}`;
    const n = p.length / 2;
    if (e.curve) d += `C${p[2]},${p[3]} ${p[4]},${p[5]} ${p[6]},${p[7]}`;
    else if (n === 2) d += `L${p[2]},${p[3]}`;
    else for (let i = 1; i < n - 1; i++) {
      const last = i === n - 2;
      const ex = last ? p[2 * i + 2] : (p[2 * i] + p[2 * i + 2]) / 2;
      const ey = last ? p[2 * i + 3] : (p[2 * i + 1] + p[2 * i + 3]) / 2;
      d += `Q${p[2 * i]},${p[2 * i + 1]} ${ex},${ey}`;
    }
    return { source: e.source, target: e.target, d };
  });
  for (const e of drawn) {
    const d = e.d;
    const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
    path.setAttribute("d", d);
    svg.append(path);
    const len = path.getTotalLength();
    const hit = new Set();
    for (let s = 0; s <= len; s += 1) {
      const q = path.getPointAtLength(s);
      for (const h of heads) if (inside(h, q.x, q.y)) hit.add(h.key);
    }
    for (const k of hit) crossings.push(`${e.source}->${e.target} crosses the title of ${k}`);
  }
  svg.remove();
  const labels = l.edgeLabelBoxes ? l.edgeLabelBoxes() : null;
  const covered = [];
  for (const b of labels ?? [])
    for (const h of heads)
      if (b.x < h.x1 && b.x + b.w > h.x0 && b.y < h.y1 && b.y + b.h > h.y0) {
        const what = `label ${JSON.stringify(b.text)} of ${b.source}->${b.target}`;
        covered.push(`${what} covers the title of ${h.key}`);
      }
  const n = labels && labels.length;
  return { heads: heads.length, edges: g.edges.length, labels: n, crossings, covered };
}"""


def measure(page) -> dict[str, Any]:
    return page.evaluate(MEASURE)


def zoo_payload(name: str) -> dict[str, Any]:
    case = TEST_MODELS[name]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def lstm_with_loss() -> dict[str, Any]:
    """The zoo's LSTM tagger and its loss, traced as one section: a <CrossEntropyLoss> box."""
    case = TEST_MODELS["lstm"]()
    loss_fn = nn.CrossEntropyLoss()
    (ids,) = case.args
    labels = torch.zeros(ids.shape, dtype=torch.long)
    with lw.tracing(case.model, save=None) as t:
        logits, _ = case.model(ids)
        loss = loss_fn(logits.flatten(0, 1), labels.flatten())
    del loss
    return build_payload(t.log)


def zoom_on(page, key: str) -> None:
    """Ctrl+wheel about a module's header, as a person zooms in to read it."""
    pos = page.evaluate("(k) => window.__el.__lens.groupHeaderPos(k)", key)
    assert pos is not None, key
    page.mouse.move(pos["x"], pos["y"])
    page.keyboard.down("Control")
    for _ in range(3):
        page.mouse.wheel(0, -120)
    page.keyboard.up("Control")
    wait_idle(page)


CASES = {
    "lstm": (lambda: zoo_payload("lstm"), "unrolled", "lstm:1"),
    "lstm_loss": (lstm_with_loss, "unrolled", "<CrossEntropyLoss>:1"),
    "gpt2_unrolled": (lambda: zoo_payload("gpt2"), "unrolled", "transformer.h.0:1"),
    "gpt2_rolled": (lambda: zoo_payload("gpt2"), "rolled", "transformer.h.0"),
}


@pytest.mark.parametrize("shapes", [False, True], ids=["plain", "shapes"])
@pytest.mark.parametrize("case", list(CASES))
def test_no_edge_or_label_crosses_a_module_title(page, artifacts, case, shapes) -> None:
    make, view, key = CASES[case]
    payload = make()
    open_widget(page, payload, traits={"view": view})
    if shapes:
        page.check("[data-testid=toggle-shapes]")
        wait_idle(page)
    first = measure(page)  # the first view, with its default expansion
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    everything = measure(page)
    assert everything["heads"] >= 3 and everything["edges"] > 5
    suffix = "_shapes" if shapes else ""
    page.screenshot(path=str(artifacts / f"edges_headers_{case}{suffix}.png"))
    boxes = {b["key"] for b in lens(page, "sceneGeometry()")["boxes"]}
    if key in boxes:
        zoom_on(page, key)
        page.screenshot(path=str(artifacts / f"edges_headers_{case}{suffix}_zoom.png"))
    assert first["crossings"] + everything["crossings"] == []
    assert everything["labels"] is not None, "the debug hook has no edgeLabelBoxes()"
    if shapes or view == "rolled":
        assert everything["labels"] > 0
    assert first["covered"] + everything["covered"] == []
    assert page.errors == []
