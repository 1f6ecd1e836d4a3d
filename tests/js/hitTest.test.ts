import { describe, expect, it } from "vitest";
import { BOX_HEADER } from "../../js/src/layout/labels";
import type { Rect, Scene } from "../../js/src/layout/scenePlan";
import { hitTest } from "../../js/src/render/hitTest";

const rect = (x: number, y: number, w: number, h: number): Rect => ({ x, y, w, h });

// an expanded module "a" holding the expanded "a.b" (stored parents first), with node n inside
const scene: Scene = {
  items: new Map([
    ["n", rect(40, 80, 60, 30)],
    ["@c", rect(300, 0, 80, 50)],
  ]),
  boxes: new Map([
    ["a", rect(0, 0, 200, 200)],
    ["a.b", rect(20, 40, 160, 140)],
  ]),
  titles: new Map(),
  origins: new Map(),
  bounds: rect(0, 0, 380, 200),
};

describe("hitTest", () => {
  it("finds nodes and collapsed modules", () => {
    expect(hitTest(scene, 50, 90)).toEqual({ type: "item", id: "n" });
    expect(hitTest(scene, 310, 10)).toEqual({ type: "item", id: "@c" });
  });

  it("finds the innermost header under the point", () => {
    expect(hitTest(scene, 10, 5)).toEqual({ type: "header", box: "a" });
    expect(hitTest(scene, 30, 40 + BOX_HEADER / 2)).toEqual({ type: "header", box: "a.b" });
  });

  it("misses a box's body and empty space", () => {
    expect(hitTest(scene, 150, 150)).toBeNull();
    expect(hitTest(scene, 250, 100)).toBeNull();
  });
});
