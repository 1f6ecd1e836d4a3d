import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { type GroupLayout, runJobs } from "../../js/src/layout/boxLayout";
import { edgeGeometry } from "../../js/src/layout/edges";
import { DEFAULT_METRICS, nodeLines } from "../../js/src/layout/labels";
import { composeScene, planLayout, SizeCache } from "../../js/src/layout/scenePlan";
import { type Camera, fitCamera } from "../../js/src/render/camera";
import type { Frame } from "../../js/src/render/frame";
import { escapeXml, fontAttrs, SvgContext } from "../../js/src/render/svgContext";
import { enlargement, frameToSvg, type SvgView } from "../../js/src/render/svgExport";
import { LIGHT } from "../../js/src/render/theme";
import { nested } from "./builders";

const measure = (text: string, font: string): number => text.length * 0.6 * Number(/([\d.]+)px/.exec(font)![1]);

/** The nested() graph laid out as the widget lays it out, with `expanded` modules open. */
function frame(expanded: string[]): Frame {
  const model = buildModel(nested(), "unrolled");
  const sizes = new SizeCache(model, DEFAULT_METRICS);
  const vis = computeVisible(model, { expanded: new Set(expanded), showParams: true });
  const cache = new Map<string, GroupLayout>();
  const plan = planLayout(vis, sizes, cache, "u|");
  for (const r of runJobs(plan.jobs)) cache.set(r.key, r);
  const scene = composeScene(vis, model, sizes, plan.keys, cache);
  return { model, vis, scene, edges: edgeGeometry(vis, model, scene, (box) => cache.get(plan.keys.get(box) ?? "")) };
}

function view(f: Frame, cam: Camera, over: Partial<SvgView> = {}): SvgView {
  return { frame: f, cam, width: 800, height: 600, theme: LIGHT, selected: null, showShapes: false, measure, ...over };
}

/** The SVG as elements: tag name and attributes, text content for <text>. */
function elements(svg: string): { tag: string; attrs: Record<string, string>; text: string }[] {
  const out = [];
  for (const m of svg.matchAll(/<(\w+)([^>]*?)\/?>(?:([^<]*)<\/text>)?/g)) {
    const attrs: Record<string, string> = {};
    for (const a of m[2].matchAll(/([\w-]+)="([^"]*)"/g)) attrs[a[1]] = a[2];
    out.push({ tag: m[1], attrs, text: m[3] ?? "" });
  }
  return out;
}

const unescapeXml = (s: string): string =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");

describe("frameToSvg", () => {
  const f = frame(["a", "b", "b.0", "b.1"]);
  const fit = fitCamera(f.scene.bounds, 800, 600);

  it("draws every node on screen as vector shapes with its labels as text, and no image", () => {
    const svg = frameToSvg(view(f, fit, { title: "Net <unrolled>" }));
    const els = elements(svg);
    expect(els[0].tag).toBe("svg");
    expect(els[0].attrs.xmlns).toBe("http://www.w3.org/2000/svg");
    const tags = new Set(els.map((e) => e.tag));
    expect(tags.has("image") || tags.has("foreignObject")).toBe(false);
    expect(tags.has("path") && tags.has("text")).toBe(true);
    const texts = els.filter((e) => e.tag === "text").map((e) => unescapeXml(e.text));
    for (const id of ["lin_1", "act_1", "x_1", "y_2"]) {
      const [func, shape] = nodeLines(f.model.nodes.get(id)!);
      expect(texts).toContain(func);
      expect(texts).toContain(shape);
    }
    // module headers, and the title escaped
    expect(texts.some((t) => t.includes("Mod_b.0"))).toBe(true);
    expect(svg).toContain("<title>Net &lt;unrolled&gt;</title>");
  });

  it("keeps to the viewport: what the canvas would cull is left out, the rest is clipped", () => {
    const item = f.scene.items.get("lin_1")!;
    // the camera shows only the area around lin_1, at 2x
    const cam: Camera = { scale: 2, tx: -(item.x - 10) * 2, ty: -(item.y - 10) * 2 };
    const svg = frameToSvg(view(f, cam, { width: (item.w + 20) * 2, height: (item.h + 20) * 2 }));
    const texts = elements(svg)
      .filter((e) => e.tag === "text")
      .map((e) => e.text);
    expect(texts).toContain("lin");
    expect(texts).not.toContain("output.0");
    expect(svg).toContain('clip-path="url(#lens-viewport)"');
    const r2 = (n: number): number => Math.round(n * 100) / 100;
    expect(svg).toContain(`matrix(2 0 0 2 ${r2(cam.tx)} ${r2(cam.ty)})`);
  });

  it("draws labels the canvas hides when zoomed out, and enlarges the SVG so they read at 100%", () => {
    const far: Camera = { scale: 0.25, tx: 0, ty: 0 };
    const svg = frameToSvg(view(f, far));
    const root = elements(svg)[0];
    expect(root.attrs.viewBox).toBe("0 0 800 600");
    expect([root.attrs.width, root.attrs.height]).toEqual(["3200", "2400"]);
    expect(elements(svg).some((e) => e.tag === "text" && e.text === "lin")).toBe(true);
    expect(enlargement(1.5, 800, 600)).toBe(1);
    expect(enlargement(0.01, 800, 600)).toBe(20); // capped at 16000 px
  });

  it("marks the selected node as the canvas does, and is the same for the same view", () => {
    const plain = frameToSvg(view(f, fit));
    const sel = frameToSvg(view(f, fit, { selected: "act_1" }));
    expect(sel).not.toBe(plain);
    expect(sel).toContain(`stroke="${LIGHT.selected}"`);
    expect(frameToSvg(view(f, fit, { selected: "act_1" }))).toBe(sel);
  });

  it("shows tensor shapes on edges when asked", () => {
    const svg = frameToSvg(view(f, fit, { showShapes: true }));
    expect(elements(svg).some((e) => e.tag === "text" && e.text === "1×4")).toBe(true);
  });
});

describe("SvgContext", () => {
  it("turns arcTo corners into SVG arcs that turn the same way as the canvas", () => {
    const ctx = new SvgContext(measure);
    ctx.beginPath();
    ctx.moveTo(5, 0);
    ctx.arcTo(10, 0, 10, 10, 5); // right, then down: clockwise on screen
    ctx.arcTo(10, 10, 0, 10, 5);
    ctx.fill();
    expect(ctx.out[0]).toBe('<path d="M5 0L5 0A5 5 0 0 1 10 5L10 5A5 5 0 0 1 5 10" fill="#000"/>');
    const ccw = new SvgContext(measure);
    ccw.beginPath();
    ccw.moveTo(0, 0);
    ccw.arcTo(10, 0, 10, -10, 2); // right, then up: counter-clockwise
    ccw.stroke();
    expect(ccw.out[0]).toContain("A2 2 0 0 0 10 -2");
  });

  it("writes text with its font, alignment, alpha and escaping", () => {
    const ctx = new SvgContext(measure);
    ctx.font = "700 11px ui-monospace, 'DejaVu Sans Mono', monospace";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.globalAlpha = 0.38;
    ctx.fillStyle = "#1f2933";
    ctx.fillText("a<b & c", 10, 20);
    expect(ctx.out[0]).toBe(
      `<text x="10" y="20" font-size="11" font-weight="700" font-family="ui-monospace, &apos;DejaVu Sans Mono&apos;, monospace" fill="#1f2933" text-anchor="middle" dominant-baseline="central" opacity="0.38">a&lt;b &amp; c</text>`,
    );
    expect(ctx.measureText("abcd").width).toBeCloseTo(4 * 0.6 * 11);
  });

  it("keeps dashes, line widths and saved state", () => {
    const ctx = new SvgContext(measure);
    ctx.save();
    ctx.lineWidth = 2.456;
    ctx.setLineDash([3, 2]);
    ctx.strokeStyle = "red";
    ctx.strokeRect(0, 0, 4, 4);
    ctx.restore();
    ctx.strokeRect(0, 0, 4, 4);
    expect(ctx.out[0]).toContain('stroke="red" stroke-width="2.46" stroke-dasharray="3 2"');
    expect(ctx.out[1]).toContain('stroke="#000" stroke-width="1"/>');
  });

  it("draws full and partial circles", () => {
    const ctx = new SvgContext(measure);
    ctx.beginPath();
    ctx.arc(0, 0, 10, 0, 2 * Math.PI);
    ctx.fill();
    expect(ctx.out[0]).toBe('<path d="M10 0A10 10 0 1 1 -10 0A10 10 0 1 1 10 0" fill="#000"/>');
  });

  it("parses fonts and escapes XML", () => {
    expect(fontAttrs("10px monospace")).toBe('font-size="10" font-family="monospace"');
    expect(fontAttrs("bold 12.5px a")).toBe('font-size="12.5" font-weight="bold" font-family="a"');
    expect(escapeXml(`<"'&>`)).toBe("&lt;&quot;&apos;&amp;&gt;");
  });
});
