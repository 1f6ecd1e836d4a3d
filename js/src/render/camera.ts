// Where the camera starts: pure math on the scene bounds, so it can be unit tested.
import type { Rect } from "../layout/layoutPlan";

export interface Camera {
  scale: number;
  tx: number; // screen = world * scale + t
  ty: number;
}

const PAD = 24;
// Below this, node labels (11px) are hard to read; a first view never goes lower.
export const READABLE_SCALE = 0.9;

/** The whole of `r` centred in a width x height view, at most `maxScale`. */
export function fitCamera(r: Rect, width: number, height: number, maxScale = 1.2): Camera {
  const s = Math.min(maxScale, (width - 2 * PAD) / Math.max(1, r.w), (height - 2 * PAD) / Math.max(1, r.h));
  const scale = Math.max(0.02, s);
  return {
    scale,
    tx: (width - r.w * scale) / 2 - r.x * scale,
    ty: Math.max(PAD, (height - r.h * scale) / 2) - r.y * scale,
  };
}

/**
 * The x the graph starts at: the middle of the topmost row of items (the inputs), so a
 * graph too wide for the view opens on where the data comes in rather than on its left edge.
 */
export function topCenterX(items: Iterable<Rect>): number | null {
  let top = Infinity;
  const all = [...items];
  for (const r of all) top = Math.min(top, r.y);
  const row = all.filter((r) => r.y <= top + 1);
  if (!row.length) return null;
  const lo = Math.min(...row.map((r) => r.x));
  const hi = Math.max(...row.map((r) => r.x + r.w));
  return (lo + hi) / 2;
}

/**
 * First view of a graph: the whole of it when that stays readable, else its top (the
 * inputs) at 100%, horizontally centred on `anchorX` but never showing empty space
 * beside a graph wider than the view.
 */
export function firstCamera(r: Rect, width: number, height: number, anchorX: number | null = null): Camera {
  const whole = Math.min(1, (width - 2 * PAD) / Math.max(1, r.w), (height - 2 * PAD) / Math.max(1, r.h));
  if (whole >= READABLE_SCALE) return fitCamera(r, width, height, 1);
  const scale = 1;
  const w = r.w * scale;
  let tx: number;
  if (w <= width - 2 * PAD) {
    tx = (width - w) / 2 - r.x * scale;
  } else {
    const cx = anchorX ?? r.x + r.w / 2;
    tx = width / 2 - cx * scale;
    tx = Math.min(PAD - r.x * scale, Math.max(width - PAD - (r.x + r.w) * scale, tx));
  }
  return { scale, tx, ty: PAD - r.y * scale };
}
