// The edges pass: routed lines with arrow heads, the selected node's edges highlighted, and
// labels (tensor shapes when asked for; in the rolled view the passes an edge occurs in), kept
// off module titles.
import type { EdgeGeom } from "../layout/edges";
import { labelAnchor } from "../layout/headers";
import { FONT_FAMILY, SMALL_PX } from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import type { Frame, Paint } from "./frame";
import { MIN_TEXT_PX } from "./zoomLevels";

export const LABEL_FONT = `${SMALL_PX - 1}px ${FONT_FAMILY}`;
const LABEL_H = 14;

export function drawEdges(p: Paint): void {
  const { ctx, theme: th, px } = p;
  ctx.lineWidth = Math.max(1.1, 0.8 * px);
  ctx.strokeStyle = th.edge;
  ctx.fillStyle = th.edge;
  const labelled: EdgeGeom[] = [];
  // edge labels are a size smaller than node labels: drawn only where that still reads
  const edgeText = p.labels && (SMALL_PX - 1) / p.px >= MIN_TEXT_PX;
  for (const e of p.frame.edges) {
    if (!p.inView(e.box)) continue;
    const pts = e.pts;
    const sel = p.selected !== null && (e.edge.source === p.selected || e.edge.target === p.selected);
    if (sel) {
      ctx.strokeStyle = th.selected;
      ctx.fillStyle = th.selected;
      ctx.lineWidth = Math.max(2, 1.6 * px);
    }
    ctx.beginPath();
    traceEdge(ctx, e);
    ctx.stroke();
    if (p.detail) arrowHead(ctx, pts, e.curve, Math.max(5, 3 * px));
    if (sel) {
      ctx.strokeStyle = th.edge;
      ctx.fillStyle = th.edge;
      ctx.lineWidth = Math.max(1.1, 0.8 * px);
    }
    if (edgeText) labelled.push(e);
  }
  if (!labelled.length) return;
  const titles: Rect[] = [];
  for (const [box, t] of p.frame.scene.titles) if (p.inView(p.frame.scene.boxes.get(box)!)) titles.push(t);
  ctx.font = LABEL_FONT;
  const items: Rect[] = [];
  for (const r of p.frame.scene.items.values()) if (p.inView(r)) items.push(r);
  const boxes = labelBoxes(p.frame, labelled, p.showShapes, (t) => ctx.measureText(t).width, titles, items);
  if (!boxes.length) return;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const b of boxes) {
    ctx.fillStyle = th.bg;
    ctx.globalAlpha = 0.85;
    ctx.fillRect(b.x, b.y, b.w, b.h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = th.edgeLabel;
    ctx.fillText(b.text, b.x + b.w / 2, b.y + b.h / 2);
  }
}

export interface LabelBox extends Rect {
  edge: EdgeGeom;
  text: string;
}

/** Where the labels of `edges` are drawn: beside each edge's middle, moved along it off the
 * module titles in `titles` (headers.ts). `measure` gives a text's width in LABEL_FONT.
 * A label of shapes alone is shown only where it fits: over none of `items` (the nodes) and
 * no label placed before it; a rolled view's pass label, which tells a loop apart, always is. */
export function labelBoxes(
  f: Frame,
  edges: readonly EdgeGeom[],
  showShapes: boolean,
  measure: (t: string) => number,
  titles: readonly Rect[],
  items: readonly Rect[] = [...f.scene.items.values()],
): LabelBox[] {
  const out: LabelBox[] = [];
  for (const e of edges) {
    const label = edgeLabel(f, e, showShapes);
    if (!label) continue;
    const { text, essential } = label;
    const w = measure(text) + 6;
    const [x, y] = labelAnchor(e.pts, e.mid, w, LABEL_H, titles);
    const box = { edge: e, text, x: x + 4, y: y - LABEL_H / 2, w, h: LABEL_H };
    if (!essential && (items.some((r) => overlaps(r, box)) || out.some((b) => overlaps(b, box)))) continue;
    out.push(box);
  }
  return out;
}

function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && a.x + a.w > b.x && a.y < b.y + b.h && a.y + a.h > b.y;
}

function edgeLabel(f: Frame, e: EdgeGeom, showShapes: boolean): { text: string; essential: boolean } | null {
  const parts: string[] = [];
  if (showShapes && e.edge.shape) parts.push(e.edge.shape.replace(/x/g, "×"));
  let essential = false;
  if (f.model.viewName === "rolled" && e.edge.passes.length > 0) {
    const n = Math.max(nPassesOf(f, e.edge.source), nPassesOf(f, e.edge.target));
    // only when the edge is not there on every pass: that is what tells a loop apart
    if (n > 1 && e.edge.passes.length < n) {
      parts.push(`pass ${compactRanges(e.edge.passes)}`);
      essential = true;
    }
  }
  return parts.length ? { text: parts.join("  "), essential } : null;
}

function nPassesOf(f: Frame, id: string): number {
  const it = f.vis.itemById.get(id);
  if (it?.node) return it.node.nPasses;
  if (it?.group) return f.model.groups.get(it.group)?.nPasses ?? 1;
  return 1;
}

/** [1, 2, 3, 5] -> "1-3,5" */
export function compactRanges(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : `${s[i]}`);
    i = j + 1;
  }
  return out.join(",");
}

/** What tracing an edge's path needs of a canvas context (the debug hook records it as SVG). */
export type PathSink = Pick<CanvasRenderingContext2D, "moveTo" | "lineTo" | "quadraticCurveTo" | "bezierCurveTo">;

/** Adds an edge's path, as drawn, to `ctx`'s current path. */
export function traceEdge(ctx: PathSink, e: EdgeGeom): void {
  const pts = e.pts;
  ctx.moveTo(pts[0], pts[1]);
  if (e.curve) ctx.bezierCurveTo(pts[2], pts[3], pts[4], pts[5], pts[6], pts[7]);
  else smoothPolyline(ctx, pts);
}

// Corners are rounded over at most this much of each segment: a long segment (a lane down the
// side of a tall block) stays straight up to its corner instead of bowing across the boxes
// beside it, and a turn squeezed between a title and a box stays as sharp as its points.
const ROUND = 16;

function smoothPolyline(ctx: PathSink, p: number[]): void {
  const n = p.length / 2;
  const toward = (i: number, j: number): [number, number] => {
    const dx = p[2 * j] - p[2 * i];
    const dy = p[2 * j + 1] - p[2 * i + 1];
    const len = Math.hypot(dx, dy);
    const k = len > 0 ? Math.min(len / 2, ROUND) / len : 0;
    return [p[2 * i] + dx * k, p[2 * i + 1] + dy * k];
  };
  for (let i = 1; i < n - 1; i++) {
    const [ax, ay] = toward(i, i - 1);
    const [bx, by] = toward(i, i + 1);
    ctx.lineTo(ax, ay);
    ctx.quadraticCurveTo(p[2 * i], p[2 * i + 1], bx, by);
  }
  ctx.lineTo(p[2 * n - 2], p[2 * n - 1]);
}

function arrowHead(ctx: CanvasRenderingContext2D, p: number[], curve: boolean, size: number): void {
  const n = p.length;
  const x = p[n - 2];
  const y = p[n - 1];
  let dx = x - p[n - 4];
  let dy = y - p[n - 3];
  if (curve) {
    dx = x - p[4];
    dy = y - p[5];
  }
  const len = Math.hypot(dx, dy) || 1;
  dx /= len;
  dy /= len;
  ctx.beginPath();
  ctx.moveTo(x, y);
  ctx.lineTo(x - dx * size * 1.6 - dy * size * 0.8, y - dy * size * 1.6 + dx * size * 0.8);
  ctx.lineTo(x - dx * size * 1.6 + dy * size * 0.8, y - dy * size * 1.6 - dx * size * 0.8);
  ctx.closePath();
  ctx.fill();
}
