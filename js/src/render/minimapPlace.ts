// Where the overview goes: a corner of the canvas where it covers no node, no module and no
// title of an open box (the inspector's subject among them); at a smaller size if no corner
// has room for the whole one; nowhere (hidden) if none has room for that either. It sat in the
// bottom-right corner whatever was there (#36: on the router's div_, a detector's output).
import type { Rect } from "../layout/scenePlan";

export type Corner = "bottom-right" | "bottom-left" | "top-right" | "top-left";

export interface MiniPlace {
  corner: Corner;
  shrink: number; // 1: full size
  rect: Rect; // in canvas px
}

const CORNERS: Corner[] = ["bottom-right", "bottom-left", "top-right", "top-left"];
export const SHRINKS = [1, 0.65];
export const MARGIN = 8;
const CLEAR = 4; // px kept free around what it must not cover

function at(corner: Corner, w: number, h: number, view: { w: number; h: number }): Rect {
  const x = corner.endsWith("right") ? view.w - MARGIN - w : MARGIN;
  const y = corner.startsWith("bottom") ? view.h - MARGIN - h : MARGIN;
  return { x, y, w, h };
}

const overlaps = (a: Rect, b: Rect): boolean =>
  a.x < b.x + b.w + CLEAR && b.x < a.x + a.w + CLEAR && a.y < b.y + b.h + CLEAR && b.y < a.y + a.h + CLEAR;

/** The first corner, full size first, where the overview of `sizeAt(shrink)` covers none of
 * `keepClear` (canvas px); null when there is none: the overview hides. */
export function placeMinimap(
  view: { w: number; h: number },
  sizeAt: (shrink: number) => { w: number; h: number },
  keepClear: readonly Rect[],
): MiniPlace | null {
  for (const shrink of SHRINKS) {
    const { w, h } = sizeAt(shrink);
    if (w + 2 * MARGIN > view.w || h + 2 * MARGIN > view.h) continue;
    for (const corner of CORNERS) {
      const rect = at(corner, w, h, view);
      if (!keepClear.some((r) => overlaps(rect, r))) return { corner, shrink, rect };
    }
  }
  return null;
}
