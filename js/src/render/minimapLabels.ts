// The minimap's names: the overview in the corner names the model's first-level modules (then
// the second level where there is room), so a person zoomed in reads where they are. Names
// are cut in the middle to fit and never drawn over one another.
import { elideMiddle, FONT_FAMILY } from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import type { Frame } from "./frame";
import type { MiniFit } from "./minimap";
import { drawNameTags } from "./nameTags";
import { overviewCandidates } from "./overviewLabels";

export const MINI_FONT_PX = 9;
export const MINI_FONT = `600 ${MINI_FONT_PX}px ${FONT_FAMILY}`;
const LINE_H = MINI_FONT_PX + 3;
const MIN_CHARS = 4;
const MAX_DEPTH = 3; // first-level modules, then what is inside them where there is room

export interface MiniLabel extends Rect {
  key: string;
  text: string;
}

/** Where the names go in a minimap of `fit` (minimap px), `measure` giving a text's width. */
export function minimapLabels(frame: Frame, fit: MiniFit, measure: (text: string) => number): MiniLabel[] {
  const b = frame.scene.bounds;
  const cam = { scale: fit.scale, tx: fit.ox - b.x * fit.scale, ty: fit.oy - b.y * fit.scale };
  const order = overviewCandidates(frame, cam)
    .filter((c) => c.depth <= MAX_DEPTH)
    .sort((a, c) => a.depth - c.depth || c.box.w * c.box.h - a.box.w * a.box.h);
  const charW = Math.max(1, measure("M"));
  const placed: MiniLabel[] = [];
  for (const c of order) {
    // a name may run past a narrow box, within the minimap (its background keeps it readable)
    const room = fit.w - 6; // its 4 px of padding and 1 px clear of each side
    const maxChars = Math.floor(room / charW);
    if (maxChars < Math.min(MIN_CHARS, c.text.length)) continue;
    const text = elideMiddle(c.text, maxChars);
    const w = measure(text) + 4;
    if (w > fit.w - 2) continue; // a font whose widest letter is not "M"
    const cx = c.open ? c.box.x + 1 : c.box.x + c.box.w / 2 - w / 2;
    const cy = c.open ? c.box.y + 1 : c.box.y + c.box.h / 2 - LINE_H / 2;
    const x = Math.max(1, Math.min(fit.w - w - 1, cx)); // inside the minimap
    // an open box nested at its parent's top left: its name goes under the parent's
    const tries = c.open ? [0, 1, 2].filter((k) => k === 0 || (k + 1) * LINE_H < c.box.h) : [0];
    for (const k of tries) {
      const y = Math.max(1, Math.min(fit.h - LINE_H - 1, cy + k * LINE_H));
      const r = { x, y, w, h: LINE_H };
      if (placed.some((p) => p.x < r.x + r.w && p.x + p.w > r.x && p.y < r.y + r.h && p.y + p.h > r.y)) continue;
      placed.push({ ...r, key: c.key, text });
      break;
    }
  }
  return placed;
}

/** Draws the names (in minimap px), each on a faint background so it reads over the boxes. */
export function drawMinimapLabels(
  ctx: CanvasRenderingContext2D,
  labels: readonly MiniLabel[],
  colors: { bg: string; text: string },
): void {
  drawNameTags(ctx, labels, { font: MINI_FONT, alpha: 0.8, pad: 2 }, colors);
}
