// Canvas 2D drawing of the scene: culled to the viewport, labels dropped when zoomed
// out, redraws batched into one requestAnimationFrame.
import { type Camera, firstCamera, fitCamera, topCenterX } from "./camera";
import type { EdgeGeom } from "../layout/edges";
import { BOX_HEADER, FONT_FAMILY, FONT_PX, groupLines, nodeLines, SMALL_PX } from "../layout/labels";
import type { Rect, Scene } from "../layout/layoutPlan";
import type { Theme } from "./theme";
import type { NodeInfo } from "../model/protocol";
import type { GraphModel } from "../model/tree";
import type { Visible } from "../model/visibility";

export interface Frame {
  model: GraphModel;
  vis: Visible;
  scene: Scene;
  edges: EdgeGeom[];
}

export type Hit = { type: "item"; id: string } | { type: "header"; box: string } | null;

const LABEL_MIN_SCALE = 0.42;
const DETAIL_MIN_SCALE = 0.2;

export class Renderer {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  cam: Camera = { scale: 1, tx: 20, ty: 20 };
  width = 1;
  height = 1;
  frame: Frame | null = null;
  selected: string | null = null;
  hover: string | null = null;
  showShapes = false;
  theme: Theme;
  drawnItems = 0; // items drawn in the last frame (for tests and benchmarks)
  lastFrameMs = 0;
  onDrawn: (() => void) | null = null;
  private raf = 0;

  constructor(canvas: HTMLCanvasElement, theme: Theme) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d")!;
    this.theme = theme;
  }

  resize(w: number, h: number): void {
    const dpr = window.devicePixelRatio || 1;
    // keep what is in the middle of the view there (the inspector opening narrows the canvas)
    if (this.frame && this.width > 1) this.cam = { ...this.cam, tx: this.cam.tx + (Math.max(1, w) - this.width) / 2 };
    this.width = Math.max(1, w);
    this.height = Math.max(1, h);
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(this.height * dpr);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${this.height}px`;
    this.draw();
  }

  request(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  dispose(): void {
    if (this.raf) cancelAnimationFrame(this.raf);
    this.raf = 0;
  }

  toScreen(x: number, y: number): [number, number] {
    return [x * this.cam.scale + this.cam.tx, y * this.cam.scale + this.cam.ty];
  }

  toWorld(sx: number, sy: number): [number, number] {
    return [(sx - this.cam.tx) / this.cam.scale, (sy - this.cam.ty) / this.cam.scale];
  }

  zoomAt(sx: number, sy: number, factor: number): void {
    const s = Math.min(4, Math.max(0.02, this.cam.scale * factor));
    const [wx, wy] = this.toWorld(sx, sy);
    this.cam = { scale: s, tx: sx - wx * s, ty: sy - wy * s };
    this.request();
  }

  fit(r: Rect, maxScale = 1.2): void {
    this.cam = fitCamera(r, this.width, this.height, maxScale);
    this.request();
  }

  /** First view of a graph (see `firstCamera`): whole if readable, else its inputs at 100%. */
  fitReadable(r: Rect): void {
    const anchor = this.frame ? topCenterX(this.frame.scene.items.values()) : null;
    this.cam = firstCamera(r, this.width, this.height, anchor);
    this.request();
  }

  centerOn(r: Rect, minScale = 0.8): void {
    const scale = Math.max(this.cam.scale, minScale);
    this.cam = {
      scale,
      tx: this.width / 2 - (r.x + r.w / 2) * scale,
      ty: this.height / 2 - (r.y + r.h / 2) * scale,
    };
    this.request();
  }

  hitTest(sx: number, sy: number): Hit {
    const f = this.frame;
    if (!f) return null;
    const [x, y] = this.toWorld(sx, sy);
    for (const [id, r] of f.scene.items) {
      if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h) return { type: "item", id };
    }
    // innermost header wins: boxes are stored parents first
    let hit: Hit = null;
    for (const [box, r] of f.scene.boxes) {
      if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + BOX_HEADER) hit = { type: "header", box };
    }
    return hit;
  }

  draw(): void {
    const t0 = performance.now();
    const ctx = this.ctx;
    const th = this.theme;
    const dpr = this.canvas.width / this.width;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, this.width, this.height);
    const f = this.frame;
    this.drawnItems = 0;
    if (!f) return;
    const { scale, tx, ty } = this.cam;
    ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * tx, dpr * ty);
    const [vx0, vy0] = this.toWorld(0, 0);
    const [vx1, vy1] = this.toWorld(this.width, this.height);
    const inView = (r: Rect): boolean => r.x <= vx1 && r.x + r.w >= vx0 && r.y <= vy1 && r.y + r.h >= vy0;
    const labels = scale >= LABEL_MIN_SCALE;
    const detail = scale >= DETAIL_MIN_SCALE;
    const px = 1 / scale; // one screen pixel in world units

    // expanded module boxes, outer first
    for (const [box, r] of f.scene.boxes) {
      if (!inView(r)) continue;
      const g = f.model.groups.get(box)!;
      const d = (g.depth - 1) % th.group.length;
      ctx.fillStyle = th.group[d];
      roundRect(ctx, r.x, r.y, r.w, r.h, 8);
      ctx.fill();
      ctx.lineWidth = Math.max(1, 1 * px);
      ctx.strokeStyle = th.groupStroke;
      ctx.stroke();
      ctx.fillStyle = th.groupHeader[d];
      roundRectTop(ctx, r.x, r.y, r.w, BOX_HEADER, 8);
      ctx.fill();
      if (labels) {
        const [cls, addr] = groupLines(g, f.model.viewName);
        ctx.font = `600 ${FONT_PX}px ${FONT_FAMILY}`;
        ctx.fillStyle = th.text;
        ctx.textBaseline = "middle";
        ctx.textAlign = "left";
        ctx.fillText("▾ " + cls, r.x + 8, r.y + BOX_HEADER / 2 + 0.5);
        const w = ctx.measureText("▾ " + cls + "  ").width;
        ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
        ctx.fillStyle = th.muted;
        ctx.fillText(addr, r.x + 8 + w, r.y + BOX_HEADER / 2 + 0.5);
      }
    }

    // edges
    ctx.lineWidth = Math.max(1.1, 0.8 * px);
    ctx.strokeStyle = th.edge;
    ctx.fillStyle = th.edge;
    const labelsToDraw: EdgeGeom[] = [];
    for (const e of f.edges) {
      if (!inView(e.box)) continue;
      const p = e.pts;
      const sel = this.selected !== null && (e.edge.source === this.selected || e.edge.target === this.selected);
      if (sel) {
        ctx.strokeStyle = th.selected;
        ctx.fillStyle = th.selected;
        ctx.lineWidth = Math.max(2, 1.6 * px);
      }
      ctx.beginPath();
      ctx.moveTo(p[0], p[1]);
      if (e.curve) ctx.bezierCurveTo(p[2], p[3], p[4], p[5], p[6], p[7]);
      else smoothPolyline(ctx, p);
      ctx.stroke();
      if (detail) arrowHead(ctx, p, e.curve, Math.max(5, 3 * px));
      if (sel) {
        ctx.strokeStyle = th.edge;
        ctx.fillStyle = th.edge;
        ctx.lineWidth = Math.max(1.1, 0.8 * px);
      }
      if (labels && this.edgeLabel(e)) labelsToDraw.push(e);
    }

    if (labelsToDraw.length) {
      ctx.font = `${SMALL_PX - 1}px ${FONT_FAMILY}`;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      for (const e of labelsToDraw) {
        const t = this.edgeLabel(e)!;
        const w = ctx.measureText(t).width + 6;
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(e.mid[0] + 4, e.mid[1] - 7, w, 14);
        ctx.globalAlpha = 1;
        ctx.fillStyle = th.edgeLabel;
        ctx.fillText(t, e.mid[0] + 4 + w / 2, e.mid[1]);
      }
    }

    // nodes and collapsed modules
    for (const [id, r] of f.scene.items) {
      if (!inView(r)) continue;
      this.drawnItems++;
      const item = f.vis.itemById.get(id)!;
      if (item.node) this.drawNode(item.node, r, labels, detail, px);
      else this.drawCollapsed(item.group!, r, labels, px);
    }

    this.lastFrameMs = performance.now() - t0;
    this.onDrawn?.();
  }

  private edgeLabel(e: EdgeGeom): string | null {
    const parts: string[] = [];
    if (this.showShapes && e.edge.shape) parts.push(e.edge.shape.replace(/x/g, "×"));
    if (this.frame?.model.viewName === "rolled" && e.edge.passes.length > 0) {
      const f = this.frame;
      const n = Math.max(nPassesOf(f, e.edge.source), nPassesOf(f, e.edge.target));
      // only when the edge is not there on every pass: that is what tells a loop apart
      if (n > 1 && e.edge.passes.length < n) parts.push("pass " + compactRanges(e.edge.passes));
    }
    return parts.length ? parts.join("  ") : null;
  }

  private drawNode(n: NodeInfo, r: Rect, labels: boolean, detail: boolean, px: number): void {
    const ctx = this.ctx;
    const th = this.theme;
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
    if (n.failed) {
      fill = th.failed;
      stroke = th.failedStroke;
      lw = 2;
    }
    const faded = !n.feedsOutput && n.kind !== "output";
    if (faded) ctx.globalAlpha = 0.38;
    if (this.selected === n.id) {
      ctx.fillStyle = th.selected;
      ctx.globalAlpha = faded ? 0.2 : 0.25;
      roundRect(ctx, r.x - 4, r.y - 4, r.w + 8, r.h + 8, radius + 4);
      ctx.fill();
      ctx.globalAlpha = faded ? 0.38 : 1;
      stroke = th.selected;
      lw = 2.4;
    } else if (this.hover === n.id) {
      stroke = th.hover;
      lw = 2;
    }
    ctx.fillStyle = fill;
    if (!detail && this.selected !== n.id) {
      // far out a node is a few pixels: a plain rectangle in its colour says enough
      ctx.fillStyle = stroke;
      ctx.fillRect(r.x, r.y, r.w, r.h);
      ctx.globalAlpha = 1;
      return;
    }
    roundRect(ctx, r.x, r.y, r.w, r.h, radius);
    ctx.fill();
    if (detail || this.selected === n.id) {
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
          ctx.fillStyle = th.muted;
          ctx.fillText(l2, cx, r.y + 25);
        }
      }
    }
    ctx.globalAlpha = 1;
  }

  private drawCollapsed(key: string, r: Rect, labels: boolean, px: number): void {
    const ctx = this.ctx;
    const th = this.theme;
    const g = this.frame!.model.groups.get(key)!;
    const id = "@" + key;
    // a second frame behind hints that the box opens
    ctx.fillStyle = th.collapsed;
    ctx.strokeStyle = th.collapsedStroke;
    ctx.lineWidth = Math.max(1, 0.8 * px);
    roundRect(ctx, r.x + 4, r.y + 4, r.w, r.h, 7);
    ctx.fill();
    ctx.stroke();
    roundRect(ctx, r.x, r.y, r.w, r.h, 7);
    ctx.fill();
    // a selected node hidden inside this module marks the module
    const marked = this.hover === id || this.selected === id;
    ctx.lineWidth = marked ? 2.4 : Math.max(1.3, px);
    ctx.strokeStyle = marked ? th.selected : th.collapsedStroke;
    ctx.stroke();
    if (!labels) return;
    const [l1, l2, l3] = groupLines(g, this.frame!.model.viewName);
    const cx = r.x + r.w / 2;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.font = `700 ${FONT_PX}px ${FONT_FAMILY}`;
    ctx.fillStyle = th.text;
    ctx.fillText(l1, cx, r.y + 12);
    ctx.font = `${SMALL_PX}px ${FONT_FAMILY}`;
    ctx.fillStyle = th.muted;
    ctx.fillText(l2, cx, r.y + 25);
    ctx.fillText(l3, cx, r.y + 38);
    ctx.fillStyle = th.collapsedStroke;
    ctx.font = `700 ${FONT_PX}px ${FONT_FAMILY}`;
    ctx.fillText("+", r.x + r.w - 9, r.y + 10);
  }
}

function nPassesOf(f: Frame, id: string): number {
  const it = f.vis.itemById.get(id);
  if (it?.node) return it.node.nPasses;
  if (it?.group) return f.model.groups.get(it.group)?.nPasses ?? 1;
  return 1;
}

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
