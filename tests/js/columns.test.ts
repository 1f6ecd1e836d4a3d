import { describe, expect, it } from "vitest";
import type { EdgeInfo, NodeInfo } from "../../js/src/graph/protocol";
import { type Placed, PORT_IN, PORT_OUT } from "../../js/src/layout/chain";
import { columnsLayout, leadColumnsLayout, leadRow, splitColumns, wrapFor } from "../../js/src/layout/columns";
import { edge, node, payload } from "./builders";
import { crossings, laidOut, segmentHitsRect } from "./geometry";

/** A chain of `n` items 150 x 50 (a stack of folded blocks), with ports when asked. */
function chain(n: number, ports = false): Placed {
  const items = Array.from({ length: n }, (_, i) => ({ id: `b${i}` }));
  const sizes = new Map<string, [number, number]>(items.map((it) => [it.id, [150, 50]]));
  const edges: [string, string][] = items.slice(1).map((it, i) => [items[i].id, it.id]);
  if (!ports) return { items, sizes, edges };
  sizes.set(PORT_IN, [2, 2]);
  sizes.set(PORT_OUT, [2, 2]);
  // a mask into every block, a cache out of every block
  for (const it of items) edges.push([PORT_IN, it.id], [it.id, PORT_OUT]);
  return { items: [{ id: PORT_IN }, ...items, { id: PORT_OUT }], sizes, edges };
}

/** Routes that run into an item they do not join. */
function routeHits(p: Placed, cols: string[][], ports: boolean): string[] {
  const raw = columnsLayout(p, cols, ports, ports);
  const rect = (i: number) => {
    const [w, h] = p.sizes.get(p.items[i].id)!;
    return { x: raw.pos[2 * i] - w / 2, y: raw.pos[2 * i + 1] - h / 2, w, h };
  };
  const bad: string[] = [];
  p.edges.forEach(([a, b], k) => {
    const pts = raw.edges[k]!;
    p.items.forEach((it, i) => {
      if (it.id === a || it.id === b || it.id === PORT_IN || it.id === PORT_OUT) return;
      for (let j = 2; j < pts.length; j += 2)
        if (segmentHitsRect(pts[j - 2], pts[j - 1], pts[j], pts[j + 1], rect(i))) bad.push(`${a}->${b} hits ${it.id}`);
    });
  });
  return bad;
}

describe("tall chains in a wide view", () => {
  it("wraps only where the view is wide, in steps", () => {
    expect(wrapFor(800, 800)).toBeNull();
    const w = wrapFor(1340, 620);
    expect(w).not.toBeNull();
    expect(w!.h).toBeGreaterThan(620); // a column fits the view at a readable 75%, not 100%
    expect(wrapFor(1341, 621)).toEqual(w);
  });

  it("cuts a chain taller than the wrap into balanced columns, as many as the width allows", () => {
    const p = chain(12);
    const cols = splitColumns(
      p,
      p.items.map((it) => it.id),
      { h: 400, w: 5000 },
    )!;
    expect(cols.length).toBeGreaterThanOrEqual(2);
    expect(cols.flat()).toEqual(p.items.map((it) => it.id)); // the order kept
    const sizes = cols.map((c) => c.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    expect(
      splitColumns(
        p,
        p.items.map((it) => it.id),
        { h: 5000, w: 5000 },
      ),
    ).toBeNull(); // fits
    expect(
      splitColumns(
        p,
        p.items.map((it) => it.id),
        { h: 400, w: 300 },
      ),
    ).toBeNull(); // no room
    p.sizes.set("b5", [150, 900]); // one open module as tall as the rest together: one column
    const ids = p.items.map((it) => it.id);
    expect(splitColumns(p, ids, { h: 400, w: 5000 })).toBeNull();
  });

  it("puts a big module and what follows it side by side when it fits the view and the whole does not", () => {
    const p = chain(5);
    p.sizes.set("b1", [400, 600]); // GPT2Model open; then the head and the outputs
    const ids = p.items.map((it) => it.id);
    const cols = splitColumns(p, ids, { h: 700, w: 5000 })!;
    expect(cols).toEqual([
      ["b0", "b1"],
      ["b2", "b3", "b4"],
    ]);
    expect(routeHits(p, cols, false)).toEqual([]);
  });

  it("opens a chain with its inputs side by side (a model's top level)", () => {
    // two inputs into a tall module, then the head and the output
    const items = ["in0", "mask", "model", "head", "out"].map((id) => ({ id }));
    const sizes = new Map<string, [number, number]>([
      ["in0", [70, 34]],
      ["mask", [150, 34]],
      ["model", [560, 700]],
      ["head", [240, 80]],
      ["out", [110, 34]],
    ]);
    const edges: [string, string][] = [
      ["in0", "model"],
      ["mask", "model"],
      ["model", "head"],
      ["head", "out"],
    ];
    const p: Placed = { items, sizes, edges };
    expect(leadRow(items, edges)).toBe(2);
    expect(leadRow(items, [...edges, ["in0", "head"]])).toBe(0); // an input past the first module
    const raw = leadColumnsLayout(p, 2, { h: 800, w: 5000 })!;
    const at = (id: string): [number, number] => {
      const i = items.findIndex((it) => it.id === id);
      return [raw.pos[2 * i], raw.pos[2 * i + 1]];
    };
    expect(at("in0")[1]).toBe(at("mask")[1]); // one row
    expect(at("in0")[1]).toBeLessThan(at("model")[1]);
    expect(at("head")[0]).toBeGreaterThan(at("model")[0] + 280); // beside the model
    expect(raw.h).toBeLessThan(34 + 700 + 80 + 34); // shorter than one column
    // each input's edge ends on the model's top, from straight above
    for (const k of [0, 1]) {
      const r = raw.edges[k]!;
      expect(r[r.length - 1]).toBeCloseTo(at("model")[1] - 350);
      expect(r[0]).toBe(r[2]);
    }
    expect(leadColumnsLayout(p, 2, { h: 5000, w: 5000 })).toBeNull(); // fits in one column
  });

  it("routes the chain and its ports around every item", () => {
    for (const ports of [false, true]) {
      const p = chain(12, ports);
      const ids = p.items.map((it) => it.id).filter((id) => id !== PORT_IN && id !== PORT_OUT);
      const cols = splitColumns(p, ids, { h: 400, w: 5000 })!;
      const raw = columnsLayout(p, cols, ports, ports);
      expect(raw.w).toBeGreaterThan(2 * 150);
      expect(raw.h).toBeLessThan(12 * 50);
      expect(routeHits(p, cols, ports)).toEqual([]);
    }
  });

  it("lays a long chain of blocks out in columns, edges clear of every box", () => {
    const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
    const edges: EdgeInfo[] = [];
    let prev = "input.0";
    for (let b = 0; b < 16; b++) {
      nodes.push(node(`a_${b}`, [`blk.${b}:1`]), node(`c_${b}`, [`blk.${b}:1`]));
      edges.push(edge(prev, `a_${b}`), edge(`a_${b}`, `c_${b}`));
      prev = `c_${b}`;
    }
    nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
    edges.push(edge(prev, "output.0"));
    const p = payload(nodes, edges);
    const tall = laidOut(p, []);
    const wide = laidOut(p, [], "unrolled", { h: 600, w: 3000 });
    expect(wide.scene.bounds.h).toBeLessThan(tall.scene.bounds.h / 2);
    expect(wide.scene.bounds.w).toBeGreaterThan(tall.scene.bounds.w * 2);
    expect(crossings(wide.scene, wide.geoms, wide.v, wide.m)).toEqual([]);
    const open = laidOut(p, ["blk.3", "blk.9"], "unrolled", { h: 600, w: 3000 });
    expect(crossings(open.scene, open.geoms, open.v, open.m)).toEqual([]);
  });
});
