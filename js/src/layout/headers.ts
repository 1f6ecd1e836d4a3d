// Module titles stay readable: the header text of an expanded box ("▾ LSTM  lstm") starts at its
// left and may run over most of its width, and the box's content is centred under it; so an
// edge going straight down into its item or port would cut through the text. An edge enters
// instead at the top border just right of the title (a box's minimum width, headerWidth in
// scenePlan.ts, leaves ~15 px there), crosses the header band there, and turns to its item
// in the padding below the header.
// Edge labels are moved along their edge off any title.

import type { ViewName } from "../graph/protocol";
import type { GroupNode } from "../graph/tree";
import { BOX_HEADER, BOX_PAD, FONT_PX, headerLines, type Metrics, SMALL_PX } from "./labels";
import type { Rect } from "./scenePlan";

export const TITLE_X = 8; // the title's left, from the box's left (drawNodes.ts draws it there)
export const TITLE_GAP = 6; // between the title's end and an edge entering beside it
const CORNER = 8; // the box's rounded corner: no edge enters there

/** The drawn width of a box's title: "▾ class  " in the header font, then the address, smaller. */
export function titleWidth(g: GroupNode, view: ViewName, m: Metrics): number {
  const [cls, addr] = headerLines(g, view);
  return (cls.length + 4) * m.charWidth + (addr.length * m.charWidth * SMALL_PX) / FONT_PX;
}

/** The band of a box's header that its title covers. */
export function titleRect(box: Rect, width: number): Rect {
  return { x: box.x + TITLE_X, y: box.y, w: width, h: BOX_HEADER };
}

/** Where an edge that goes on at `x` inside `box` crosses its top border: `x` itself unless the
 * title is in the way, else just right of the title (never into the rounded corner). */
export function entryX(box: Rect, title: Rect, x: number): number {
  if (x <= title.x - TITLE_GAP || x >= title.x + title.w + TITLE_GAP) return x;
  return Math.min(title.x + title.w + TITLE_GAP, box.x + box.w - CORNER);
}

const TURN_UP = 6; // above a box, where an arrival straight down turns toward the entry point

/**
 * Appends to `pts` (world x,y, ending where the route outside reached `box`, at its top border)
 * the way into `box` down to (x, y): the arrival led to the entry point (a slanted one moved
 * there, one straight down turned just above the box), then straight down through the header,
 * and where the entry is not above `x`, along the padding under the header to it. Corners get
 * points 1 px apart, so the drawn curve (drawEdges.ts rounds corners) cannot swing into the title.
 */
export function enterBox(pts: number[], box: Rect, title: Rect | undefined, x: number, y: number): void {
  const ex = title ? entryX(box, title, x) : x;
  const n = pts.length;
  const atTop = n >= 4 && Math.abs(pts[n - 1] - box.y) < 1 && pts[n - 3] < box.y;
  if (atTop && pts[n - 2] !== ex) {
    const [px, py] = [pts[n - 4], pts[n - 3]];
    if (px !== pts[n - 2]) {
      // slanted across the gap above the box (nothing there): aim it at the entry instead
      pts[n - 2] = ex;
    } else {
      // straight down a clear column: turn in the gap just above the box
      const up = Math.min(TURN_UP, (box.y - py) / 2);
      pts[n - 1] = box.y - up;
      pts.push(ex, box.y - up, ex, box.y);
    }
  } else pts.push(ex, box.y);
  pts.push(ex, box.y + 1);
  const dx = x - ex;
  if (Math.abs(dx) >= 3) {
    const s = Math.sign(dx);
    const turn = box.y + BOX_HEADER + BOX_PAD / 2;
    pts.push(ex, turn - 1, ex + s, turn, x - s, turn, x, turn + 1);
  }
  pts.push(x, y);
}

const OVER = (a: Rect, b: Rect): boolean => a.x < b.x + b.w && a.x + a.w > b.x && a.y < b.y + b.h && a.y + a.h > b.y;

/** The point at fraction `f` of a polyline's length. */
export function pointAlong(pts: readonly number[], f: number): [number, number] {
  let total = 0;
  for (let i = 2; i < pts.length; i += 2) total += Math.hypot(pts[i] - pts[i - 2], pts[i + 1] - pts[i - 1]);
  let left = total * f;
  for (let i = 2; i < pts.length; i += 2) {
    const d = Math.hypot(pts[i] - pts[i - 2], pts[i + 1] - pts[i - 1]);
    if (d > 0 && left <= d) {
      const t = left / d;
      return [pts[i - 2] + t * (pts[i] - pts[i - 2]), pts[i - 1] + t * (pts[i + 1] - pts[i - 1])];
    }
    left -= d;
  }
  return [pts[pts.length - 2], pts[pts.length - 1]];
}

const TRIES = [0.5, 0.35, 0.65, 0.2, 0.8, 0.1, 0.9];

/**
 * Where a label of `w` x `h` goes on an edge: its left-middle 4 px right of a point of the
 * edge, `mid` first, else the first point along it (from the middle out) whose label covers
 * no title; `mid` when every one does.
 */
export function labelAnchor(
  pts: readonly number[],
  mid: [number, number],
  w: number,
  h: number,
  titles: readonly Rect[],
): [number, number] {
  const clear = (p: [number, number]): boolean => {
    const r = { x: p[0] + 4, y: p[1] - h / 2, w, h };
    for (const t of titles) if (OVER(r, t)) return false;
    return true;
  };
  if (clear(mid)) return mid;
  for (const f of TRIES) {
    const p = pointAlong(pts, f);
    if (clear(p)) return p;
  }
  return mid;
}
