import { describe, expect, it } from "vitest";
import type { EdgeInfo, GraphPayload, NodeInfo } from "../../js/src/graph/protocol";
import { runJobs } from "../../js/src/layout/boxLayout";
import { bandRoute, rankBands } from "../../js/src/layout/routes";
import { edge, nested, node, payload } from "./builders";
import { crossings, laidOut, segmentHitsRect } from "./geometry";

/** Two residual blocks: x -> ln -> a1 -> a2 -> a3 -> add(x) -> ln2 -> m1 -> m2 -> add2, KV outputs from a1. */
function residual(blocks = 2): GraphPayload {
  const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
  const edges: EdgeInfo[] = [];
  let x = "input.0";
  for (let b = 0; b < blocks; b++) {
    const g = `h.${b}:1`;
    const id = (s: string) => `${s}_${b}`;
    nodes.push(
      node(id("ln"), [g, `h.${b}.ln:1`]),
      node(id("a1"), [g, `h.${b}.attn:1`]),
      node(id("a2"), [g, `h.${b}.attn:1`]),
      node(id("a3"), [g, `h.${b}.attn:1`]),
      node(id("add"), [g]),
      node(id("m1"), [g, `h.${b}.mlp:1`]),
      node(id("m2"), [g, `h.${b}.mlp:1`]),
      node(id("add2"), [g]),
    );
    edges.push(
      edge(x, id("ln")),
      edge(id("ln"), id("a1")),
      edge(id("a1"), id("a2")),
      edge(id("a2"), id("a3")),
      edge(id("a3"), id("add")),
      edge(x, id("add")),
      edge(id("add"), id("m1")),
      edge(id("m1"), id("m2")),
      edge(id("m2"), id("add2")),
      edge(id("add"), id("add2")),
    );
    x = id("add2");
  }
  nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
  edges.push(edge(x, "output.0"));
  for (let b = 0; b < blocks; b++) {
    nodes.push(node(`output.kv.${b}`, [], { kind: "output", func: `output.kv.${b}` }));
    edges.push(edge(`a1_${b}`, `output.kv.${b}`));
  }
  return payload(nodes, edges);
}

describe("segmentHitsRect", () => {
  const r = { x: 0, y: 0, w: 10, h: 10 };
  it("sees a segment through a box, not one beside it or along its border", () => {
    expect(segmentHitsRect(-5, 5, 15, 5, r)).toBe(true);
    expect(segmentHitsRect(-5, -5, 15, 15, r)).toBe(true);
    expect(segmentHitsRect(-5, 12, 15, 12, r)).toBe(false);
    expect(segmentHitsRect(0, -5, 0, 15, r)).toBe(false); // on the left border
    expect(segmentHitsRect(5, -5, 5, 0, r)).toBe(false); // ends on the top border
  });
});

describe("bandRoute", () => {
  it("runs vertically through each rank band and turns only between bands", () => {
    const a = { x: 50, y: 20, w: 40, h: 20 };
    const tall = { x: 120, y: 60, w: 40, h: 60 }; // a neighbour rank with a tall node
    const b = { x: 100, y: 140, w: 40, h: 20 };
    const bands = rankBands([a, tall, b]);
    const route = bandRoute([50, 30, 80, 60, 100, 130], a, b, bands);
    // down from a's bottom, across below a's band, through the tall rank at the dummy's x
    expect(route).toEqual([50, 30, 80, 30, 80, 90, 100, 130]);
    for (let i = 0; i + 3 < route.length; i += 2)
      expect(segmentHitsRect(route[i], route[i + 1], route[i + 2], route[i + 3], { x: 100, y: 30, w: 40, h: 60 })).toBe(
        false,
      );
  });

  it("keeps dagre's points for an edge that goes up", () => {
    const pts = [10, 50, 10, 0];
    expect(bandRoute(pts, { x: 10, y: 60, w: 20, h: 20 }, { x: 10, y: -10, w: 20, h: 20 }, [])).toEqual(pts);
  });
});

describe("routing through nested boxes", () => {
  const all = ["h.0", "h.1", "h.0.attn", "h.1.attn", "h.0.mlp", "h.1.mlp", "h.0.ln", "h.1.ln"];
  for (const [name, expanded] of [
    ["collapsed", []],
    ["blocks open", ["h.0", "h.1"]],
    ["everything open", all],
    ["one block open", ["h.1", "h.1.attn"]],
  ] as [string, string[]][])
    it(`crosses no box an edge does not connect (${name})`, () => {
      const { m, v, scene, geoms } = laidOut(residual(), expanded);
      expect(geoms.length).toBe(v.edges.length);
      expect(crossings(scene, geoms, v, m)).toEqual([]);
    });

  it("routes an edge that enters a box below its first row through the box's in port", () => {
    const { cache, plan, geoms, scene } = laidOut(residual(), ["h.0", "h.1"]);
    const block = cache.get(plan.keys.get("h.1:1")!)!;
    expect(block.portIn).toBe(true); // the residual reaches add_1, below the attention
    const skip = geoms.find((g) => g.edge.source === "add2_0" && g.edge.target === "add_1")!;
    const add = scene.items.get("add_1")!;
    expect(skip.pts[skip.pts.length - 1]).toBeCloseTo(add.y);
    expect(skip.pts[skip.pts.length - 2]).toBeCloseTo(add.x + add.w / 2);
  });

  it("keeps straight entries where nothing is in the way", () => {
    const { cache, plan } = laidOut(nested(), ["a", "b", "b.0", "b.1"]);
    const a = cache.get(plan.keys.get("a:1")!)!;
    expect(a.portIn).toBe(false);
    expect(a.portOut).toBe(false);
  });
});

describe("a chain with ports", () => {
  it("stays one column, its port edges in lanes beside it", () => {
    const items = ["a", "b", "c", "d"].map((id) => ({ id, w: 80 + id.charCodeAt(0), h: 40 }));
    const job = {
      key: "stack",
      items,
      edges: [
        ["a", "b"],
        ["b", "c"],
        ["c", "d"],
      ] as [string, string][],
      minW: 0,
      ports: { in: ["a", "c"], out: ["b", "c", "d"] },
    };
    const l = runJobs([job])[0];
    expect(l.portIn && l.portOut).toBe(true);
    const xs = items.map((it) => l.pos[it.id][0]);
    expect(new Set(xs).size).toBe(1);
    const rects = items.map((it) => ({
      x: l.pos[it.id][0] - it.w / 2,
      y: l.pos[it.id][1] - it.h / 2,
      w: it.w,
      h: it.h,
    }));
    for (const [key, pts] of Object.entries(l.edgePoints)) {
      const [from, to] = key.split("\n");
      for (const [i, r] of rects.entries()) {
        if (items[i].id === from || items[i].id === to) continue;
        for (let k = 0; k + 3 < pts.length; k += 2)
          expect(segmentHitsRect(pts[k], pts[k + 1], pts[k + 2], pts[k + 3], r)).toBe(false);
      }
      // every point inside the box's content
      for (let k = 0; k < pts.length; k += 2) {
        expect(pts[k]).toBeGreaterThanOrEqual(0);
        expect(pts[k]).toBeLessThanOrEqual(l.w);
      }
    }
    // into c from the in port: it ends on c's top centre
    const into = l.edgePoints["⤒in\nc"];
    expect(into.slice(-2)).toEqual([l.pos.c[0], l.pos.c[1] - 20]);
  });
});
