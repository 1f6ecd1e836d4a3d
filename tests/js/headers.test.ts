import { describe, expect, it } from "vitest";
import { enterBox, entryX, labelAnchor, pointAlong, TITLE_GAP, titleRect } from "../../js/src/layout/headers";
import { BOX_HEADER } from "../../js/src/layout/labels";
import type { Rect } from "../../js/src/layout/scenePlan";
import { nested } from "./builders";
import { laidOut } from "./geometry";

const box: Rect = { x: 100, y: 50, w: 200, h: 120 };
const title = titleRect(box, 120); // x 108 .. 228

/** Whether a segment passes through the inside of r (sampled: the routes are axis-aligned or short). */
function hits(x0: number, y0: number, x1: number, y1: number, r: Rect): boolean {
  for (let t = 0; t <= 1; t += 1 / 64) {
    const x = x0 + t * (x1 - x0);
    const y = y0 + t * (y1 - y0);
    if (x > r.x && x < r.x + r.w && y > r.y + 1 && y < r.y + r.h) return true;
  }
  return false;
}

function crossesTitle(pts: readonly number[], r: Rect): boolean {
  for (let i = 2; i < pts.length; i += 2) if (hits(pts[i - 2], pts[i - 1], pts[i], pts[i + 1], r)) return true;
  return false;
}

describe("entryX", () => {
  it("keeps an edge that is clear of the title where it is", () => {
    expect(entryX(box, title, 260)).toBe(260);
  });
  it("moves an edge under the title to just right of it", () => {
    expect(entryX(box, title, 200)).toBe(228 + TITLE_GAP);
    expect(entryX(box, title, 110)).toBe(228 + TITLE_GAP);
  });
  it("never into the box's rounded corner", () => {
    const full = titleRect(box, 190);
    expect(entryX(box, full, 150)).toBeLessThanOrEqual(box.x + box.w - 8);
  });
});

describe("enterBox", () => {
  it("arrives beside the title and turns under the header to the item", () => {
    const pts = [150, 20, 200, box.y]; // the route outside ends at the box's top centre
    enterBox(pts, box, title, 200, 120);
    expect(pts[2]).toBe(228 + TITLE_GAP); // the arrival moved, no run along the border
    expect(pts[3]).toBe(box.y);
    expect(pts.slice(-2)).toEqual([200, 120]);
    expect(crossesTitle(pts, title)).toBe(false);
    // the turn is in the padding under the header
    const ys = pts.filter((_, i) => i % 2 === 1 && pts[i - 1] === 200);
    expect(Math.min(...ys)).toBeGreaterThan(box.y + BOX_HEADER);
  });
  it("keeps an arrival straight down straight, turning just above the box", () => {
    // a long clear column (an edge that came straight down an outer box): never slanted across
    const pts = [200, -400, 200, box.y];
    enterBox(pts, box, title, 200, 120);
    expect(pts.slice(0, 8)).toEqual([200, -400, 200, box.y - 6, 228 + TITLE_GAP, box.y - 6, 228 + TITLE_GAP, box.y]);
    expect(crossesTitle(pts, title)).toBe(false);
  });
  it("goes straight down where the title is not in the way", () => {
    const pts = [270, 20, 200, box.y];
    enterBox(pts, box, title, 270, 120);
    expect(pts).toEqual([270, 20, 270, box.y, 270, box.y + 1, 270, 120]);
  });
});

describe("labelAnchor", () => {
  const pts = [150, 0, 150, box.y, 150, box.y + 60]; // a vertical edge through the title
  it("keeps a label at the edge's middle when it covers no title", () => {
    expect(labelAnchor(pts, [150, 20], 30, 14, [title])).toEqual([150, 20]);
  });
  it("moves a label that would cover a title along its edge", () => {
    const [x, y] = labelAnchor(pts, [150, box.y + 8], 30, 14, [title]);
    expect(x).toBe(150);
    const r = { x: x + 4, y: y - 7, w: 30, h: 14 };
    const over = r.x < title.x + title.w && r.x + r.w > title.x && r.y < title.y + title.h && r.y + r.h > title.y;
    expect(over).toBe(false);
  });
  it("walks the polyline by length", () => {
    expect(pointAlong([0, 0, 10, 0, 10, 10], 0.75)).toEqual([10, 5]);
  });
});

describe("edges into expanded modules", () => {
  const { v, scene, geoms } = laidOut(nested(), ["a", "b", "b.0", "b.1"]);

  it("knows each box's title and leaves room right of it", () => {
    expect(scene.titles.size).toBe(scene.boxes.size);
    for (const [k, t] of scene.titles) {
      const b = scene.boxes.get(k)!;
      expect(t.x + t.w + TITLE_GAP).toBeLessThanOrEqual(b.x + b.w - 8);
    }
  });

  it("never crosses a module's title", () => {
    expect(geoms.length).toBeGreaterThan(5);
    const entering = geoms.filter((g) => g.edge.lca !== (v.itemById.get(g.edge.target)?.container ?? ""));
    expect(entering.length).toBeGreaterThan(0);
    for (const g of geoms) for (const t of scene.titles.values()) expect(crossesTitle(g.pts, t)).toBe(false);
  });
});
