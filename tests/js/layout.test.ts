import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { boxSize, type GroupLayout, runJobs } from "../../js/src/layout/boxLayout";
import { DEFAULT_METRICS } from "../../js/src/layout/labels";
import { composeScene, planLayout, type Rect, SizeCache } from "../../js/src/layout/scenePlan";
import { nested, wide } from "./builders";

const m = buildModel(nested(), "unrolled");
const sizes = new SizeCache(m, DEFAULT_METRICS);
const vis = (expanded: string[]) => computeVisible(m, { expanded: new Set(expanded), showParams: false });

function layoutAll(expanded: string[], cache: Map<string, GroupLayout>) {
  const v = vis(expanded);
  const plan = planLayout(v, sizes, cache, "u|");
  for (const r of runJobs(plan.jobs)) cache.set(r.key, r);
  return { v, plan };
}

const inside = (a: Rect, b: Rect) =>
  a.x >= b.x - 1e-6 && a.y >= b.y - 1e-6 && a.x + a.w <= b.x + b.w + 1e-6 && a.y + a.h <= b.y + b.h + 1e-6;
const overlap = (a: Rect, b: Rect) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("planLayout", () => {
  it("asks for every expanded box, children before parents, child sizes by reference", () => {
    const plan = planLayout(vis(["b", "b.0"]), sizes, new Map(), "u|");
    const order = plan.jobs.map((j) => j.key);
    expect(order).toEqual([plan.keys.get("b.0:1"), plan.keys.get("b:1"), plan.keys.get("")]);
    const bJob = plan.jobs[1];
    expect(bJob.items.find((i) => i.id === "@b.0:1")!.ref).toBe(plan.keys.get("b.0:1"));
    expect(bJob.items.find((i) => i.id === "@b.1:1")!.ref).toBeUndefined();
  });

  it("re-lays out only the expanded box and its ancestors", () => {
    const cache = new Map<string, GroupLayout>();
    layoutAll(["a", "b"], cache);
    const plan = planLayout(vis(["a", "b", "b.1"]), sizes, cache, "u|");
    expect(plan.jobs.map((j) => j.key)).toEqual([plan.keys.get("b.1:1"), plan.keys.get("b:1"), plan.keys.get("")]);
    // a sibling that did not change comes from the cache
    expect(plan.jobs.some((j) => j.key === plan.keys.get("a:1"))).toBe(false);
  });

  it("needs no work to go back to a layout seen before", () => {
    const cache = new Map<string, GroupLayout>();
    layoutAll(["b"], cache);
    layoutAll(["b", "b.0"], cache);
    expect(planLayout(vis(["b"]), sizes, cache, "u|").jobs).toEqual([]);
    // another prefix (view / params toggle) is a different layout
    expect(planLayout(vis(["b"]), sizes, cache, "r|").jobs.length).toBe(2);
  });
});

describe("runJobs + composeScene", () => {
  it("places items inside their boxes without overlaps", () => {
    const cache = new Map<string, GroupLayout>();
    const { v, plan } = layoutAll(["a", "b", "b.0", "b.1"], cache);
    const scene = composeScene(v, m, sizes, plan.keys, cache);
    expect(scene.items.size).toBe(v.items.length);
    for (const it of v.items) {
      const r = scene.items.get(it.id)!;
      if (it.container) expect(inside(r, scene.boxes.get(it.container)!)).toBe(true);
    }
    expect(inside(scene.boxes.get("b.0:1")!, scene.boxes.get("b:1")!)).toBe(true);
    const rects = [...scene.items.values()];
    for (let i = 0; i < rects.length; i++)
      for (let j = i + 1; j < rects.length; j++) expect(overlap(rects[i], rects[j])).toBe(false);
    expect(overlap(scene.boxes.get("a:1")!, scene.boxes.get("b:1")!)).toBe(false);
  });

  it("ranks a chain top to bottom", () => {
    const cache = new Map<string, GroupLayout>();
    const { v, plan } = layoutAll([], cache);
    const scene = composeScene(v, m, sizes, plan.keys, cache);
    const ys = v.items.map((i) => scene.items.get(i.id)!.y);
    expect([...ys].sort((a, b) => a - b)).toEqual(ys);
  });

  it("sizes a box from its content plus padding and header", () => {
    const [job] = planLayout(vis(["a"]), sizes, new Map(), "u|").jobs;
    const l = runJobs([job])[0];
    const [w, h] = boxSize(l);
    expect(w).toBeGreaterThan(l.w);
    expect(h).toBeGreaterThan(l.h);
    expect(l.w).toBeGreaterThanOrEqual(job.minW);
  });

  it("handles about a thousand ops when laid out per box", () => {
    const big = buildModel(wide(12, 8, 10), "unrolled");
    const s = new SizeCache(big, DEFAULT_METRICS);
    const all = new Set<string>();
    for (const g of big.groups.values()) if (g.key) all.add(g.address);
    const v = computeVisible(big, { expanded: all, showParams: false });
    const plan = planLayout(v, s, new Map(), "u|");
    expect(plan.jobs.length).toBe(1 + 12 + 96);
    const cache = new Map(runJobs(plan.jobs).map((r) => [r.key, r]));
    const scene = composeScene(v, big, s, plan.keys, cache);
    expect(scene.items.size).toBe(962);
  });
});

describe("chain fast path", () => {
  it("stacks a chain in one column with straight edges", () => {
    const job = {
      key: "k",
      items: [
        { id: "a", w: 80, h: 30 },
        { id: "b", w: 120, h: 30 },
        { id: "c", w: 60, h: 40 },
      ],
      edges: [
        ["a", "b"],
        ["b", "c"],
      ] as [string, string][],
      minW: 0,
    };
    const l = runJobs([job])[0];
    expect(l.w).toBe(120);
    expect(l.pos.a[0]).toBe(60);
    expect(l.pos.c[0]).toBe(60);
    expect(l.pos.a[1]).toBeLessThan(l.pos.b[1]);
    expect(l.pos.b[1]).toBeLessThan(l.pos.c[1]);
    expect(l.edgePoints["a\nb"]).toEqual([60, l.pos.a[1] + 15, 60, l.pos.b[1] - 15]);
  });

  it("leaves branching boxes to dagre, side by side", () => {
    const job = {
      key: "k",
      items: [
        { id: "a", w: 80, h: 30 },
        { id: "b", w: 80, h: 30 },
        { id: "c", w: 80, h: 30 },
      ],
      edges: [
        ["a", "b"],
        ["a", "c"],
      ] as [string, string][],
      minW: 0,
    };
    const l = runJobs([job])[0];
    expect(l.pos.b[1]).toBe(l.pos.c[1]);
    expect(l.pos.b[0]).not.toBe(l.pos.c[0]);
  });
});

describe("shape memo", () => {
  it("gives boxes of the same shape the same relative layout", () => {
    const mk = (p: string) => ({
      key: p,
      items: ["a", "b", "c", "d"].map((x, i) => ({ id: p + x, w: 60 + i * 10, h: 30 })),
      edges: [
        [`${p}a`, `${p}b`],
        [`${p}a`, `${p}c`],
        [`${p}b`, `${p}d`],
        [`${p}c`, `${p}d`],
      ] as [string, string][],
      minW: 0,
    });
    const [l1, l2] = runJobs([mk("x"), { ...mk("y"), minW: 1000 }]);
    for (const k of ["a", "b", "c", "d"]) expect(l2.pos[`y${k}`][1]).toBe(l1.pos[`x${k}`][1]);
    // the wider header shifts the content to its centre
    expect(l2.w).toBe(1000);
    expect(l2.pos.ya[0] - l1.pos.xa[0]).toBeCloseTo((1000 - l1.w) / 2);
    expect(l2.edgePoints["ya\nyb"].length).toBe(l1.edgePoints["xa\nxb"].length);
  });
});
