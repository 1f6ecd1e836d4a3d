import { describe, expect, it } from "vitest";
import { nested } from "./builders";
import { laidOut } from "./geometry";

describe("edgeGeometry", () => {
  const { v, scene, geoms } = laidOut(nested(), ["a", "b", "b.0", "b.1"]);
  const find = (s: string, t: string) => geoms.find((g) => g.edge.source === s && g.edge.target === t)!;

  it("draws every visible edge from its source to its target", () => {
    expect(geoms.length).toBe(v.edges.length);
    for (const g of geoms) {
      const a = scene.items.get(g.edge.source)!;
      const b = scene.items.get(g.edge.target)!;
      const n = g.pts.length;
      // starts on the source box's border, ends on the target box's border (2 px slack)
      expect(g.pts[0]).toBeGreaterThanOrEqual(a.x - 2);
      expect(g.pts[0]).toBeLessThanOrEqual(a.x + a.w + 2);
      expect(g.pts[1]).toBeGreaterThanOrEqual(a.y + a.h / 2 - 2);
      expect(g.pts[n - 2]).toBeGreaterThanOrEqual(b.x - 2);
      expect(g.pts[n - 2]).toBeLessThanOrEqual(b.x + b.w + 2);
      expect(g.pts[n - 1]).toBeLessThanOrEqual(b.y + b.h / 2 + 2);
    }
  });

  it("follows the enclosing box's route for edges that cross boxes", () => {
    const g = find("y_1", "x_2"); // b.0 -> b.1, laid out inside b
    expect(g.curve).toBe(false);
    expect(g.pts.length).toBeGreaterThan(4);
    const boxB = scene.boxes.get("b:1")!;
    for (let i = 0; i < g.pts.length; i += 2) {
      expect(g.pts[i]).toBeGreaterThanOrEqual(boxB.x);
      expect(g.pts[i]).toBeLessThanOrEqual(boxB.x + boxB.w);
    }
  });

  it("bounds each edge for culling", () => {
    for (const g of geoms)
      for (let i = 0; i < g.pts.length; i += 2) {
        expect(g.pts[i]).toBeGreaterThanOrEqual(g.box.x - 1e-9);
        expect(g.pts[i]).toBeLessThanOrEqual(g.box.x + g.box.w + 1e-9);
        expect(g.pts[i + 1]).toBeGreaterThanOrEqual(g.box.y - 1e-9);
        expect(g.pts[i + 1]).toBeLessThanOrEqual(g.box.y + g.box.h + 1e-9);
      }
  });
});
