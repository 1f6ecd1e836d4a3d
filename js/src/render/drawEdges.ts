// The edges pass: routed lines with arrow heads, the selected node's edges highlighted, and
// labels (tensor shapes when asked for; in the rolled view the passes an edge occurs in).
import type { EdgeGeom } from "../layout/edges";
import { FONT_FAMILY, SMALL_PX } from "../layout/labels";
import type { Frame, Paint } from "./frame";

export function drawEdges(p: Paint): void {
  const { ctx, theme: th, px } = p;
  ctx.lineWidth = Math.max(1.1, 0.8 * px);
  ctx.strokeStyle = th.edge;
  ctx.fillStyle = th.edge;
  const labelled: [EdgeGeom, string][] = [];
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
    ctx.moveTo(pts[0], pts[1]);
    if (e.curve) ctx.bezierCurveTo(pts[2], pts[3], pts[4], pts[5], pts[6], pts[7]);
    else smoothPolyline(ctx, pts);
    ctx.stroke();
    if (p.detail) arrowHead(ctx, pts, e.curve, Math.max(5, 3 * px));
    if (sel) {
      ctx.strokeStyle = th.edge;
      ctx.fillStyle = th.edge;
      ctx.lineWidth = Math.max(1.1, 0.8 * px);
    }
    const text = p.labels ? edgeLabel(p.frame, e, p.showShapes) : null;
    if (text) labelled.push([e, text]);
  }
  if (!labelled.length) return;
  ctx.font = `${SMALL_PX - 1}px ${FONT_FAMILY}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const [e, t] of labelled) {
    const w = ctx.measureText(t).width + 6;
    ctx.fillStyle = th.bg;
    ctx.globalAlpha = 0.85;
    ctx.fillRect(e.mid[0] + 4, e.mid[1] - 7, w, 14);
    ctx.globalAlpha = 1;
    ctx.fillStyle = th.edgeLabel;
    ctx.fillText(t, e.mid[0] + 4 + w / 2, e.mid[1]);
  }
}

function edgeLabel(f: Frame, e: EdgeGeom, showShapes: boolean): string | null {
  const parts: string[] = [];
  if (showShapes && e.edge.shape) parts.push(e.edge.shape.replace(/x/g, "×"));
  if (f.model.viewName === "rolled" && e.edge.passes.length > 0) {
    const n = Math.max(nPassesOf(f, e.edge.source), nPassesOf(f, e.edge.target));
    // only when the edge is not there on every pass: that is what tells a loop apart
    if (n > 1 && e.edge.passes.length < n) parts.push("pass " + compactRanges(e.edge.passes));
  }
  return parts.length ? parts.join("  ") : null;
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

function smoothPolyline(ctx: CanvasRenderingContext2D, p: number[]): void {
  const n = p.length / 2;
  if (n === 2) {
    ctx.lineTo(p[2], p[3]);
    return;
  }
  for (let i = 1; i < n - 1; i++) {
    const mx = (p[2 * i] + p[2 * i + 2]) / 2;
    const my = (p[2 * i + 1] + p[2 * i + 3]) / 2;
    ctx.quadraticCurveTo(p[2 * i], p[2 * i + 1], i === n - 2 ? p[2 * i + 2] : mx, i === n - 2 ? p[2 * i + 3] : my);
  }
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
