// The overview's text (semantic zoom, zoomLevels.ts): far out, each module, open or folded,
// is named at OVERVIEW_PX on screen, whatever the zoom: an open box by its title at its top
// left, a folded one in its middle. Names are cut in the middle to fit their box and never
// drawn over one another: outer boxes first (they say where things are), then folded modules.
import type { ViewName } from "../graph/protocol";
import type { GroupNode } from "../graph/tree";
import { elideMiddle, FONT_FAMILY, groupLines, nodeLines } from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import type { Camera } from "./camera";
import type { Frame } from "./frame";
import { drawNameTags } from "./nameTags";
import { OVERVIEW_PX } from "./zoomLevels";

export const OVERVIEW_FONT = `600 ${OVERVIEW_PX}px ${FONT_FAMILY}`;
const LINE_H = OVERVIEW_PX + 4;
const MIN_CHARS = 6; // a name cut shorter than this says nothing: it is left out
const MIN_BOX = 16; // a folded module narrower than this on screen is not named (px)
const SPILL = 180; // a name may be this wide past a narrow box (px)

/** A module to name: its box on screen, its name, and whether it is open. */
export interface OverviewCandidate {
  key: string; // "@" + group key for a folded module, the group key for an open box
  text: string;
  box: Rect; // on screen
  open: boolean;
  depth: number;
}

/** A name placed on screen (px): its text and the rect its background covers. */
export interface OverviewLabel extends Rect {
  key: string;
  text: string;
  open: boolean;
}

/** "GPT2Block ×12", "GPT2Block h.3", "Linear lm_head": a module's class and where it is. */
export function overviewText(g: GroupNode, view: ViewName): string {
  const [cls] = groupLines(g, view);
  if (g.kind === "stack" || g.kind === "outputs" || g.chunk || !g.address) return cls;
  const parts = g.address.split(".");
  const n = parts.length;
  // a block of a stack is told apart by its number: "h.3"; anything else by its own name
  const where = n >= 2 && /^\d+$/.test(parts[n - 1]) ? `${parts[n - 2]}.${parts[n - 1]}` : parts[n - 1];
  return `${cls} ${where}`;
}

/** Where each candidate's name goes, `measure` giving a text's width in OVERVIEW_FONT. Names
 * that would cover a placed one, or that fit their box only as a stub, are left out. */
export function placeOverview(
  candidates: readonly OverviewCandidate[],
  measure: (text: string) => number,
  view: Rect,
): OverviewLabel[] {
  const order = [...candidates].sort(
    (a, b) => Number(b.open) - Number(a.open) || a.depth - b.depth || b.box.w * b.box.h - a.box.w * a.box.h,
  );
  const placed: OverviewLabel[] = [];
  const charW = Math.max(1, measure("M"));
  for (const c of order) {
    // a name may run past a narrow box (its background keeps it readable over what is there)
    const room = c.open ? Math.max(c.box.w - 8, SPILL) : Math.max(c.box.w, SPILL);
    if (c.open && c.box.h < LINE_H * 1.5) continue; // a thin open box: its folded contents speak
    if (!c.open && (c.box.w < MIN_BOX || c.box.h < MIN_BOX / 4)) continue; // a speck: not named
    const maxChars = Math.floor(room / charW);
    if (maxChars < Math.min(MIN_CHARS, c.text.length)) continue;
    const text = elideMiddle(c.text, maxChars);
    const w = measure(text) + 6;
    const x = c.open ? c.box.x + 3 : c.box.x + c.box.w / 2 - w / 2;
    const y = c.open ? c.box.y + 2 : c.box.y + c.box.h / 2 - LINE_H / 2;
    const r = { x, y, w, h: LINE_H };
    if (!overlaps(r, view)) continue;
    if (placed.some((p) => overlaps(p, r))) continue;
    placed.push({ ...r, key: c.key, text, open: c.open });
  }
  return placed;
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && a.x + a.w > b.x && a.y < b.y + b.h && a.y + a.h > b.y;
}

/** The overview's candidates in `frame` seen through `cam`: every open box and folded module. */
export function overviewCandidates(frame: Frame, cam: Camera): OverviewCandidate[] {
  const screen = (r: Rect): Rect => ({
    x: r.x * cam.scale + cam.tx,
    y: r.y * cam.scale + cam.ty,
    w: r.w * cam.scale,
    h: r.h * cam.scale,
  });
  const out: OverviewCandidate[] = [];
  const view = frame.model.viewName;
  for (const [key, r] of frame.scene.boxes) {
    const g = frame.model.groups.get(key);
    if (g) out.push({ key, text: overviewText(g, view), box: screen(r), open: true, depth: g.depth });
  }
  for (const it of frame.vis.items) {
    const n = it.node;
    if (n && (n.kind === "input" || n.kind === "output")) {
      // what goes in and comes out, by name, after the modules
      const r = frame.scene.items.get(it.id);
      if (r) out.push({ key: it.id, text: nodeLines(n)[0], box: screen(r), open: false, depth: 99 });
      continue;
    }
    if (!it.group) continue;
    const g = frame.model.groups.get(it.group);
    const r = frame.scene.items.get(it.id);
    if (g && r) out.push({ key: it.id, text: overviewText(g, view), box: screen(r), open: false, depth: g.depth });
  }
  return out;
}

/** Draws the overview's names (in screen pixels: the caller resets the transform). */
export function drawOverview(
  ctx: CanvasRenderingContext2D,
  labels: readonly OverviewLabel[],
  colors: { bg: string; text: string },
): void {
  drawNameTags(ctx, labels, { font: OVERVIEW_FONT, alpha: 0.85, pad: 3 }, colors);
}
