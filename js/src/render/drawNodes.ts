// The module and node passes: expanded module boxes with their headers, then the nodes
// (coloured by kind) and the collapsed modules, as much detail as the zoom allows.

import type { NodeInfo } from "../graph/protocol";
import { TITLE_X } from "../layout/headers";
import {
  BOX_HEADER,
  FN_TAG,
  FN_TAG_X,
  FONT_FAMILY,
  FONT_PX,
  groupLines,
  headerLines,
  nodeLines,
  SMALL_PX,
} from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import { COLLECTIVE_STROKE, collectiveFill, hexagonPath } from "../ranks/collectives";
import { shareBar } from "./deviceOverlay";
import type { Paint } from "./frame";
import { textOn } from "./overlay";
import { GRAD_NONFINITE_MARK, NO_GRAD_STROKE } from "./overlayLegend";
import type { Theme } from "./theme";

// the tag on a box of a plain function's ops, where a module box has none

/** Expanded module boxes, outer first. */
export function drawBoxes(p: Paint): void {
  const { ctx, theme: th, frame: f } = p;
  for (const [box, r] of f.scene.boxes) {
    if (!p.inView(r)) continue;
    const g = f.model.groups.get(box)!;
    const d = (g.depth - 1) % th.group.length;
    ctx.fillStyle = th.group[d];
    roundRect(ctx, r.x, r.y, r.w, r.h, 8);
    ctx.fill();
    // a plain function of the model's code (create_causal_mask()), not a module: dashed
    const fn = g.kind === "function";
    if (fn) ctx.setLineDash([5, 3]);
    // the module inspected: its box outlined as a selected node is
    const marked = box === p.selectedBox;
    ctx.lineWidth = marked ? Math.max(2.4, 2 * p.px) : Math.max(1, 1 * p.px);
    ctx.strokeStyle = marked ? th.selected : th.groupStroke;
    ctx.stroke();
    if (fn) ctx.setLineDash([]);
    ctx.fillStyle = th.groupHeader[d];
    roundRectTop(ctx, r.x, r.y, r.w, BOX_HEADER, 8);
    ctx.fill();
    if (marked) {
      ctx.save();
      ctx.globalAlpha = 0.18;
      ctx.fillStyle = th.selected;
      ctx.fill();
      ctx.restore();
    }
    if (p.labels) {
      const [cls, addr] = headerLines(g, f.model.viewName);
      ctx.font = `${fn ? "italic " : ""}600 ${FONT_PX}px ${FONT_FAMILY}`;
      ctx.fillStyle = th.text;
      ctx.textBaseline = "middle";
      ctx.textAlign = "left";
      ctx.fillText(`▾ ${cls}`, r.x + TITLE_X, r.y + BOX_HEADER / 2 + 0.5);
      const w = ctx.measureText(`▾ ${cls}  `).width;
      if (fn) {
        ctx.font = `600 ${SMALL_PX}px ${FONT_FAMILY}`;
        ctx.fillStyle = th.muted;
        ctx.textAlign = "right";
        ctx.fillText(FN_TAG, r.x + r.w - TITLE_X, r.y + BOX_HEADER / 2 + 0.5);
        ctx.textAlign = "left";
      }
      ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
      ctx.fillStyle = th.muted;
      ctx.fillText(addr, r.x + TITLE_X + w, r.y + BOX_HEADER / 2 + 0.5);
    }
  }
}

/** Nodes and collapsed modules in view; returns how many were drawn. */
export function drawItems(p: Paint): number {
  const f = p.frame;
  let drawn = 0;
  for (const [id, r] of f.scene.items) {
    if (!p.inView(r)) continue;
    drawn++;
    const item = f.vis.itemById.get(id)!;
    if (item.node) drawNode(p, item.node, r);
    else drawCollapsed(p, item.group!, r);
  }
  return drawn;
}

function drawNode(p: Paint, n: NodeInfo, r: Rect): void {
  const { ctx, theme: th, labels, detail, px } = p;
  let fill = th.node;
  let stroke = th.nodeStroke;
  let lw = 1;
  let radius = 5;
  let textColor = th.text;
  let bold = false;
  const small = n.kind === "param" || n.kind === "buffer" || n.kind === "const";
  if (n.kind === "input") {
    fill = th.input;
    stroke = th.inputStroke;
    radius = r.h / 2;
    lw = 1.6;
    bold = true;
  } else if (n.kind === "output") {
    fill = th.output;
    stroke = th.outputStroke;
    radius = r.h / 2;
    lw = 1.6;
    bold = true;
  } else if (small) {
    fill = th.paramNode;
    stroke = th.paramStroke;
    textColor = th.muted;
    radius = 3;
  } else if (n.hasParams) {
    fill = th.hasParams;
    stroke = th.hasParamsStroke;
    bold = true;
    lw = 1.3;
  }
  if (n.kind === "op" && !n.fromInput) {
    fill = th.internal;
    textColor = th.muted;
    if (!n.hasParams) stroke = th.paramStroke;
  }
  if (n.collective) {
    // a collective of torch.distributed: its own colours, a hexagon (outline below)
    fill = collectiveFill(th.dark);
    stroke = COLLECTIVE_STROKE;
    lw = 2;
    bold = true;
  }
  if (n.failed) {
    fill = th.failed;
    stroke = th.failedStroke;
    lw = 2;
  }
  const overlaid = p.overlay?.fill(n.id) ?? null; // a metric overlay colors the node, not its kind
  if (overlaid) {
    fill = overlaid;
    textColor = textOn(overlaid);
  }
  const faded = !n.feedsOutput && n.kind !== "output";
  if (faded) ctx.globalAlpha = 0.38;
  if (p.selected === n.id) {
    ctx.fillStyle = th.selected;
    ctx.globalAlpha = faded ? 0.2 : 0.25;
    roundRect(ctx, r.x - 4, r.y - 4, r.w + 8, r.h + 8, radius + 4);
    ctx.fill();
    ctx.globalAlpha = faded ? 0.38 : 1;
    stroke = th.selected;
    lw = 2.4;
  } else if (p.hover === n.id) {
    stroke = th.hover;
    lw = 2;
  }
  ctx.fillStyle = fill;
  if (!detail && p.selected !== n.id) {
    // far out a node is a few pixels: a plain rectangle in its colour says enough
    ctx.fillStyle = overlaid ?? stroke;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 1;
    return;
  }
  const outline = n.collective ? (): void => hexagonPath(ctx, r.x, r.y, r.w, r.h) : undefined;
  if (outline) outline();
  else roundRect(ctx, r.x, r.y, r.w, r.h, radius);
  ctx.fill();
  drawShareBar(p, n.id, r, radius);
  drawGradientMarks(p, n.id, r, radius, outline);
  if (p.overlay?.flagged(n.id)) drawNonfiniteMark(ctx, r, th, !!p.overlay.quietFlag?.(n.id));
  if (detail || p.selected === n.id) {
    ctx.lineWidth = Math.max(lw, lw * 0.6 * px);
    ctx.strokeStyle = stroke;
    if (small) ctx.setLineDash([3, 2]);
    ctx.stroke();
    if (small) ctx.setLineDash([]);
  }
  if (labels) {
    const [l1, l2] = nodeLines(n);
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillStyle = textColor;
    const cx = r.x + r.w / 2;
    if (small) {
      ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
      ctx.fillText(l2 ? `${shortName(n.func)} ${l2}` : shortName(n.func), cx, r.y + r.h / 2 + 0.5);
    } else {
      ctx.font = `${bold ? "700 " : ""}${FONT_PX}px ${FONT_FAMILY}`;
      ctx.fillText(l1, cx, r.y + (l2 ? 12 : r.h / 2));
      if (l2) {
        ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
        ctx.fillStyle = overlaid ? textColor : th.muted;
        ctx.fillText(l2, cx, r.y + 25);
      }
    }
  }
  ctx.globalAlpha = 1;
}

function drawCollapsed(p: Paint, key: string, r: Rect): void {
  const { ctx, theme: th, px } = p;
  const g = p.frame.model.groups.get(key)!;
  const id = `@${key}`;
  // frames behind hint that the box opens: one for a module, a deck for a stack of blocks
  const outputs = g.kind === "outputs";
  const fill = outputs ? th.output : th.collapsed;
  const stroke = outputs ? th.outputStroke : th.collapsedStroke;
  const fn = g.kind === "function"; // a plain function of the model's code: dashed, italic, "fn"
  ctx.fillStyle = fill;
  ctx.strokeStyle = stroke;
  ctx.lineWidth = Math.max(1, 0.8 * px);
  if (fn) ctx.setLineDash([5, 3]);
  for (const d of g.kind === "stack" ? [8, 4] : [4]) {
    roundRect(ctx, r.x + d, r.y + d, r.w, r.h, 7);
    ctx.fill();
    ctx.stroke();
  }
  const overlaid = p.overlay?.fill(id) ?? null; // a metric's color: the text must read on it
  ctx.fillStyle = overlaid ?? fill;
  roundRect(ctx, r.x, r.y, r.w, r.h, 7);
  ctx.fill();
  drawShareBar(p, id, r, 7);
  drawGradientMarks(p, id, r, 7);
  if (p.overlay?.flagged(id)) drawNonfiniteMark(ctx, r, th, !!p.overlay.quietFlag?.(id));
  // a selected node hidden inside this module marks the module
  const marked = p.hover === id || p.selected === id;
  ctx.lineWidth = marked ? 2.4 : Math.max(1.3, px);
  ctx.strokeStyle = marked ? th.selected : stroke;
  ctx.stroke();
  if (fn) ctx.setLineDash([]);
  if (!p.labels) return;
  const [l1, l2, l3] = groupLines(g, p.frame.model.viewName);
  const cx = r.x + r.w / 2;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.font = `${fn ? "italic " : ""}700 ${FONT_PX}px ${FONT_FAMILY}`;
  ctx.fillStyle = overlaid ? textOn(overlaid) : th.text;
  ctx.fillText(l1, cx, r.y + 12);
  if (fn) {
    ctx.font = `600 ${SMALL_PX}px ${FONT_FAMILY}`;
    ctx.fillStyle = overlaid ? textOn(overlaid) : th.muted;
    ctx.textAlign = "left";
    ctx.fillText(FN_TAG, r.x + FN_TAG_X, r.y + 10);
    ctx.textAlign = "center";
  }
  ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
  ctx.fillStyle = overlaid ? textOn(overlaid) : th.muted;
  ctx.fillText(l2, cx, r.y + 25);
  ctx.fillText(l3, cx, r.y + 38);
  ctx.fillStyle = stroke;
  ctx.font = `700 ${FONT_PX}px ${FONT_FAMILY}`;
  ctx.fillText("+", r.x + r.w - 9, r.y + 10);
}

/** A red triangle in the top-right corner: this output (or one inside the module) is NaN/Inf;
 * `quiet`: smaller and grey, its NaN/Inf is masked away later and never reaches the output. */
function drawNonfiniteMark(ctx: CanvasRenderingContext2D, r: Rect, th: Theme, quiet: boolean): void {
  const s = Math.min(quiet ? 9 : 12, r.h / 2);
  ctx.beginPath();
  ctx.moveTo(r.x + r.w - s, r.y);
  ctx.lineTo(r.x + r.w, r.y);
  ctx.lineTo(r.x + r.w, r.y + s);
  ctx.closePath();
  if (!quiet) {
    ctx.fillStyle = th.failedStroke;
    return ctx.fill();
  }
  ctx.save();
  ctx.globalAlpha = 0.55;
  ctx.fillStyle = th.muted;
  ctx.fill();
  ctx.restore();
}

/** The device overlay's mark of an item whose ops ran on several devices: a bar along its
 * bottom edge, each device's color as wide as its share of the ops. */
function drawShareBar(p: Paint, id: string, r: Rect, radius: number): void {
  const shares = p.overlay?.shares(id);
  if (!shares?.length) return;
  const h = Math.min(4, r.h / 5); // under a module's last line of text
  const y = r.y + r.h - h - 1.5;
  const inset = Math.min(radius, r.w / 4);
  for (const [x, w, color] of shareBar(shares, r.x + inset, r.w - 2 * inset)) {
    p.ctx.fillStyle = color;
    p.ctx.fillRect(x, y, w, h);
  }
}

/** A purple top-left corner for a NaN/Inf gradient; a dashed orange outline around a leaf
 * (or an op reading a parameter) that got no gradient. Leaves the path of the node's shape. */
function drawGradientMarks(p: Paint, id: string, r: Rect, radius: number, outline?: () => void): void {
  const { ctx, overlay } = p;
  if (!overlay) return;
  if (overlay.starved(id)) {
    ctx.save();
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = Math.max(2, 1.5 * p.px);
    ctx.strokeStyle = NO_GRAD_STROKE;
    roundRect(ctx, r.x - 3, r.y - 3, r.w + 6, r.h + 6, radius + 3);
    ctx.stroke();
    ctx.restore();
  }
  if (overlay.gradFlagged(id)) {
    const s = Math.min(12, r.h / 2);
    ctx.fillStyle = GRAD_NONFINITE_MARK;
    ctx.beginPath();
    ctx.moveTo(r.x, r.y);
    ctx.lineTo(r.x + s, r.y);
    ctx.lineTo(r.x, r.y + s);
    ctx.closePath();
    ctx.fill();
  }
  if (outline) outline();
  else roundRect(ctx, r.x, r.y, r.w, r.h, radius); // the node's outline is stroked next
}

function shortName(name: string): string {
  const parts = name.split(".");
  return parts.length > 2 ? parts.slice(-2).join(".") : name;
}

function roundRect(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number, r: number): void {
  const rr = Math.min(r, w / 2, h / 2);
  ctx.beginPath();
  ctx.moveTo(x + rr, y);
  ctx.arcTo(x + w, y, x + w, y + h, rr);
  ctx.arcTo(x + w, y + h, x, y + h, rr);
  ctx.arcTo(x, y + h, x, y, rr);
  ctx.arcTo(x, y, x + w, y, rr);
  ctx.closePath();
}

function roundRectTop(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number, r: number): void {
  const rr = Math.min(r, w / 2, h);
  ctx.beginPath();
  ctx.moveTo(x, y + h);
  ctx.lineTo(x, y + rr);
  ctx.arcTo(x, y, x + rr, y, rr);
  ctx.lineTo(x + w - rr, y);
  ctx.arcTo(x + w, y, x + w, y + rr, rr);
  ctx.lineTo(x + w, y + h);
  ctx.closePath();
}
