// Where the camera starts: pure math on the scene bounds, so it can be unit tested.
import type { Rect } from "../layout/scenePlan";

export interface Camera {
  scale: number;
  tx: number; // screen = world * scale + t
  ty: number;
}

const PAD = 24;
// Node labels (11px) read well from here up.
export const READABLE_SCALE = 0.9;
// A first view shows the whole graph down to this zoom (labels still drawn, text ~6-9 px);
// a graph that needs less opens at 100% on its inputs instead.
export const FIRST_MIN_SCALE = 0.5;
// A first view prefers the most detail that fits from this zoom up (node text ~8 px, read
// without effort), to more detail at a zoom between FIRST_MIN_SCALE and this.
export const FIRST_READ_SCALE = 0.75;

// A first view that fits opens more of the model while the whole still fits at this zoom, trying
// at most MAX_GROW_TRIES modules (each a layout).
export const FIRST_OPEN_SCALE = 0.7;
const MAX_GROW_TRIES = 6;

/** The zoom at which all of `r` fits a width x height view (at most 1). */
export function wholeScale(r: Rect, width: number, height: number): number {
  return Math.min(1, (width - 2 * PAD) / Math.max(1, r.w), (height - 2 * PAD) / Math.max(1, r.h));
}

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
 * First view of a graph: the whole of it when that stays legible (FIRST_MIN_SCALE), else
 * its top (the inputs) at 100%, horizontally centred on `anchorX` but never showing empty
 * space beside a graph wider than the view.
 */
export function firstCamera(r: Rect, width: number, height: number, anchorX: number | null = null): Camera {
  if (wholeScale(r, width, height) >= FIRST_MIN_SCALE) return fitCamera(r, width, height, 1);
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

/**
 * The search for a first view that shows the whole model: lay out the default expansion
 * (the last level), and while the graph does not fit at FIRST_READ_SCALE, close its deepest
 * open level, down to `lowest` (the first level that shows more than a handful of items).
 * When no level above `lowest` fits at FIRST_READ_SCALE, the deepest that fits at
 * FIRST_MIN_SCALE (else `lowest` if it reads); when none does, the default expansion opens at
 * 100% on its inputs. A level whose layout cannot change the outcome is not asked for: `lowest`
 * once a deeper level is legible.
 */
export class FitSearch {
  private index: number;
  private settled = false;
  private legible: number | null = null; // the deepest level that fit at FIRST_MIN_SCALE
  // once a level fits: its modules opened one at a time, biggest first, while the view still
  // fits at FIRST_OPEN_SCALE (wav2vec2 showed 8 boxes at 100% with half the canvas empty)
  private grown: string[] | null = null; // the expansion kept so far
  private trial: string[] | null = null; // the one laid out now
  private readonly refused = new Set<string>();
  private tries = 0;

  /** `grow`: the modules a view of `expansion` may open next, biggest first (none: no growing). */
  constructor(
    private readonly levels: string[][],
    private readonly lowest: number,
    private readonly grow?: (expansion: string[]) => string[],
  ) {
    this.index = levels.length - 1;
  }

  get expansion(): string[] {
    return this.trial ?? this.grown ?? this.levels[this.index];
  }

  /**
   * After a layout of `expansion` with these bounds: the expansion to try next, or null to keep
   * it. Levels `mayFit` rules out (a floor on their height, see `mayFitHeight`) are passed over
   * without a layout.
   */
  next(
    bounds: Rect,
    width: number,
    height: number,
    mayFit: (expansion: string[]) => boolean = () => true,
  ): string[] | null {
    const scale = wholeScale(bounds, width, height);
    if (this.grown) return this.grownNext(scale, mayFit);
    if (this.settled) return null;
    // the lowest level (the model as one or two boxes) is read at any zoom but says little:
    // a deeper level legible at a small zoom is better
    // (with `grow`, the lowest opens what fits at FIRST_OPEN_SCALE instead: the person reads it)
    if (scale >= FIRST_READ_SCALE && (this.index > this.lowest || this.legible === null || this.grow)) {
      this.settled = true;
      if (!this.grow) return null;
      this.grown = this.levels[this.index];
      return this.nextTrial(mayFit);
    }
    if (scale >= FIRST_MIN_SCALE && this.legible === null) this.legible = this.index;
    let next = this.advance();
    while (next && !this.settled && !mayFit(next)) next = this.advance();
    return next;
  }

  private grownNext(scale: number, mayFit: (expansion: string[]) => boolean): string[] | null {
    const trial = this.trial;
    if (!trial) return null; // the kept expansion laid out again: done
    if (scale >= FIRST_OPEN_SCALE) this.grown = trial;
    else this.refused.add(trial[trial.length - 1]);
    return this.nextTrial(mayFit);
  }

  /** The kept expansion with one more module open, or (no more to try) the kept one again
   * when another was laid out last; null when the last layout is the kept one. */
  private nextTrial(mayFit: (expansion: string[]) => boolean): string[] | null {
    const kept = this.grown!;
    while (this.tries < MAX_GROW_TRIES) {
      const open = new Set(kept);
      const module = this.grow!(kept).find((m) => !open.has(m) && !this.refused.has(m));
      if (module === undefined) break;
      const trial = [...kept, module];
      if (!mayFit(trial)) {
        this.refused.add(module);
        continue;
      }
      this.tries++;
      this.trial = trial;
      return trial;
    }
    const last = this.trial;
    this.trial = null;
    this.tries = MAX_GROW_TRIES;
    // nothing opened on the lowest level: a deeper level legible at a smaller zoom says more
    if (kept === this.levels[this.index] && this.index === this.lowest && this.legible !== null) {
      this.grown = null;
      this.index = this.legible;
      return this.expansion;
    }
    return last && last !== kept ? kept : null;
  }

  private advance(): string[] | null {
    // `lowest` is kept only when no deeper level is legible: with one, its layout decides nothing
    if (this.index > this.lowest + (this.legible === null || this.grow ? 0 : 1)) {
      this.index--;
      return this.expansion;
    }
    this.settled = true;
    // none reads without effort: the deepest that fits, else the default (its layout is cached)
    const back = this.legible ?? this.levels.length - 1;
    if (this.index === back) return null;
    this.index = back;
    return this.expansion;
  }
}

/** Whether a graph at least `floor` tall may fit a view `height` tall at FIRST_MIN_SCALE. */
export function mayFitHeight(floor: number, height: number): boolean {
  return floor * FIRST_MIN_SCALE <= height - 2 * PAD;
}

// A camera that follows the person (a module opened, a search hit) zooms out no further than
// this: node text (11 px) is ~7 px on screen, still read without effort.
export const FOLLOW_MIN_SCALE = 0.62;

/**
 * The camera after `r` (a module just opened, a search hit) should be seen: `cam` itself when
 * `r` is already in view; else panned the least that brings it in; zoomed out (never in) only
 * when `r` does not fit at `cam`'s zoom, and never below `minScale`. A box still bigger than
 * the view shows its top left, where its title and first items are. `fixed` (a screen point,
 * e.g. where the person clicked): the world point under it stays there when the zoom changes.
 */
export function revealCamera(
  cam: Camera,
  r: Rect,
  width: number,
  height: number,
  minScale = FOLLOW_MIN_SCALE,
  fixed: [number, number] | null = null,
): Camera {
  const fitScale = Math.min((width - 2 * PAD) / Math.max(1, r.w), (height - 2 * PAD) / Math.max(1, r.h));
  const scale = fitScale >= cam.scale ? cam.scale : Math.min(cam.scale, Math.max(fitScale, minScale));
  let { tx, ty } = cam;
  if (scale !== cam.scale) {
    // zoom about the fixed point (by default the middle of r's top edge) so the view jumps least
    const [sx, sy] = fixed ?? [(r.x + r.w / 2) * cam.scale + cam.tx, r.y * cam.scale + cam.ty];
    const wx = (sx - cam.tx) / cam.scale;
    const wy = (sy - cam.ty) / cam.scale;
    tx = sx - wx * scale;
    ty = sy - wy * scale;
  }
  return {
    scale,
    tx: tx + panInto(r.x * scale + tx, r.w * scale, width),
    ty: ty + panInto(r.y * scale + ty, r.h * scale, height),
  };
}

/** The least shift that puts [lo, lo + len] inside [PAD, size - PAD]; its start when it is too long. */
function panInto(lo: number, len: number, size: number): number {
  if (len > size - 2 * PAD || lo < PAD) return PAD - lo;
  const hi = lo + len;
  return hi > size - PAD ? size - PAD - hi : 0;
}

/** Whether all of `r` is on screen under `cam` in a width x height view. */
export function inView(cam: Camera, r: Rect, width: number, height: number): boolean {
  const x = r.x * cam.scale + cam.tx;
  const y = r.y * cam.scale + cam.ty;
  return x >= 0 && y >= 0 && x + r.w * cam.scale <= width && y + r.h * cam.scale <= height;
}
