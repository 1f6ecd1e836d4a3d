// No title cut at the canvas's side: after the widget moves the camera (a module opened, a
// double click that goes down, a jump to an op, the inspector narrowing the graph), a box's
// title read "etMidBlock2DCrossAttn" where the box stood across the left edge (#36). The camera
// is then shifted sideways the least that leaves every title on screen whole or wholly off it,
// never more than a nudge and never taking what it was placed for (`keep`) out of view; where a
// row is wider than the view, zoomed out a little first. Pure, so vitest checks it; the
// renderer applies it at the end of each such move (Renderer.wholeTitles).
import type { Rect } from "../layout/scenePlan";
import type { Camera } from "./camera";

const GAP = 6; // px between a title brought in and the edge
const TOL = 1; // a title over an edge by no more than this is not cut
const MAX_SHIFT = 1 / 3; // of the view's width: a nudge, not a pan

/** A title (screen x span) crosses the left or right edge of a view `w` wide. */
export function isCut(x0: number, x1: number, w: number): boolean {
  return (x0 < -TOL && x1 > TOL) || (x0 < w - TOL && x1 > w + TOL);
}

/** The share of [x0, x1] inside [0, w]. */
const shownShare = (x0: number, x1: number, w: number): number =>
  x1 > x0 ? Math.max(0, Math.min(x1, w) - Math.max(x0, 0)) / (x1 - x0) : 1;

/**
 * `cam` shifted sideways so that no title in `titles` (graph coordinates: items, whose text is
 * centred across them, and open boxes' title bands) that is on screen vertically crosses the
 * view's left or right edge. The shift is the least that does it, at most a third of the view,
 * and leaves as much of `keep` (what the camera was placed for) on screen as before. Where no
 * shift clears them all (a row wider than the view), the camera zooms out a little about
 * `keep` (never by more than ZOOM_STEPS allow, nor below `minScale` unless it is there already)
 * until one does; failing that, the shift that leaves fewest cut. `cam` itself when nothing is
 * cut, or nothing allowed cuts fewer.
 */
export function wholeTitles(
  cam: Camera,
  titles: Iterable<Rect>,
  width: number,
  height: number,
  keep: Rect | null = null,
  minScale = 0,
): Camera {
  const all = [...titles].filter((r) => r.w > 0);
  const kept = keep && shownShare(keep.x * cam.scale + cam.tx, (keep.x + keep.w) * cam.scale + cam.tx, width);
  // zoom about keep's centre (else the view's): it stays where it was on screen
  const [sx, sy] = keep
    ? [(keep.x + keep.w / 2) * cam.scale + cam.tx, (keep.y + keep.h / 2) * cam.scale + cam.ty]
    : [width / 2, height / 2];
  let fallback: Camera = cam;
  for (const f of ZOOM_STEPS) {
    const scale = cam.scale * f;
    if (f < 1 && scale < Math.min(cam.scale, minScale)) break;
    const at: Camera = {
      scale,
      tx: sx - ((sx - cam.tx) / cam.scale) * scale,
      ty: sy - ((sy - cam.ty) / cam.scale) * scale,
    };
    const { shift, cut, before } = leastShift(at, all, width, height, keep, kept);
    if (f === 1 && before === 0) return cam;
    if (f === 1 && shift !== 0) fallback = { ...at, tx: at.tx + shift };
    if (cut === 0) return { ...at, tx: at.tx + shift };
  }
  return fallback;
}

// zoom factors tried, in order, where no shift alone keeps every title whole
const ZOOM_STEPS = [1, 0.96, 0.92, 0.88, 0.84, 0.8];

/** At `cam`: the least shift that leaves fewest titles cut (0: none cuts fewer), how many are
 * cut then, and how many are cut at `cam` itself. `kept`: the share of `keep` to keep shown. */
function leastShift(
  cam: Camera,
  titles: readonly Rect[],
  width: number,
  height: number,
  keep: Rect | null,
  kept: number | null,
): { shift: number; cut: number; before: number } {
  const limit = width * MAX_SHIFT;
  const spans: [number, number][] = []; // screen x spans of the titles a nudge can change
  for (const r of titles) {
    const y0 = r.y * cam.scale + cam.ty;
    if (y0 >= height || y0 + r.h * cam.scale <= 0) continue;
    const x0 = r.x * cam.scale + cam.tx;
    const x1 = x0 + r.w * cam.scale;
    if (x1 < -limit - GAP || x0 > width + limit + GAP) continue; // off by more than a nudge
    spans.push([x0, x1]);
  }
  const cuts = (s: number): number => {
    let n = 0;
    for (const [x0, x1] of spans) if (isCut(x0 + s, x1 + s, width)) n++;
    return n;
  };
  const before = cuts(0);
  if (before === 0) return { shift: 0, cut: 0, before };
  const k = keep && [keep.x * cam.scale + cam.tx, (keep.x + keep.w) * cam.scale + cam.tx];
  const keeps = (s: number): boolean => !k || kept === null || shownShare(k[0] + s, k[1] + s, width) >= kept - 1e-3;
  // the fewest cut is reached where some title just comes in whole or just goes off
  let best = 0;
  let fewest = keeps(0) ? before : Infinity;
  for (const [x0, x1] of spans) {
    for (const s of [GAP - x0, -x1 - TOL, width - GAP - x1, width + TOL - x0]) {
      if (Math.abs(s) > limit || !keeps(s)) continue;
      const n = cuts(s);
      if (n < fewest || (n === fewest && Math.abs(s) < Math.abs(best))) {
        best = s;
        fewest = n;
      }
    }
  }
  return { shift: best, cut: fewest, before };
}
