// What is under a point of the scene (world coordinates).
import { BOX_HEADER } from "../layout/labels";
import type { Scene } from "../layout/scenePlan";

export type Hit = { type: "item"; id: string } | { type: "header"; box: string } | null;

/** A node or collapsed module at (x, y), else the innermost expanded module whose header is there. */
export function hitTest(scene: Scene, x: number, y: number): Hit {
  for (const [id, r] of scene.items) {
    if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h) return { type: "item", id };
  }
  // innermost header wins: boxes are stored parents first
  let hit: Hit = null;
  for (const [box, r] of scene.boxes) {
    if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + BOX_HEADER) hit = { type: "header", box };
  }
  return hit;
}
