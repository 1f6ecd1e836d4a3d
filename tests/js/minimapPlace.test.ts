// The overview never covers what is shown (#36 item 7): it moves to a free corner, shrinks, or hides.
import { describe, expect, it } from "vitest";
import type { Rect } from "../../js/src/layout/scenePlan";
import { miniFit } from "../../js/src/render/minimap";
import { placeMinimap } from "../../js/src/render/minimapPlace";

const view = { w: 566, h: 560 }; // a graph narrowed beside the inspector
const size = (k: number) => miniFit({ x: 0, y: 0, w: 400, h: 2000 }, k);
const hits = (a: Rect, b: Rect) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

describe("the overview's place", () => {
  it("is the bottom-right corner when nothing is there", () => {
    const p = placeMinimap(view, size, [{ x: 200, y: 100, w: 120, h: 34 }])!;
    expect(p.corner).toBe("bottom-right");
    expect(p.shrink).toBe(1);
  });

  it("moves off a node in the bottom-right corner", () => {
    const node = { x: 450, y: 480, w: 100, h: 34 };
    const p = placeMinimap(view, size, [node])!;
    expect(p.corner).toBe("bottom-left");
    expect(hits(p.rect, node)).toBe(false);
  });

  it("shrinks when every corner has a node near it, and hides when even the small one covers one", () => {
    const big = size(1);
    const corners: Rect[] = [
      { x: 8 + big.w - 30, y: 8 + big.h - 20, w: 20, h: 10 }, // inside each full-size corner rect,
      { x: view.w - 8 - big.w + 10, y: 8 + big.h - 20, w: 20, h: 10 }, // outside the shrunk one
      { x: 8 + big.w - 30, y: view.h - 8 - big.h + 10, w: 20, h: 10 },
      { x: view.w - 8 - big.w + 10, y: view.h - 8 - big.h + 10, w: 20, h: 10 },
    ];
    const p = placeMinimap(view, size, corners)!;
    expect(p.shrink).toBeLessThan(1);
    for (const c of corners) expect(hits(p.rect, c)).toBe(false);
    const everywhere = [
      { x: 0, y: 0, w: view.w, h: 60 },
      { x: 0, y: view.h - 60, w: view.w, h: 60 },
    ];
    expect(placeMinimap(view, size, everywhere)).toBeNull();
  });
});
