// The graph canvas: camera (pan, zoom, fit), redraws batched into one requestAnimationFrame,
// each frame culled to the viewport and drawn in three passes (boxes, edges, nodes) with
// labels dropped when zoomed out.

import { GROUP_PREFIX } from "../graph/visibility";
import { SMALL_PX } from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import { type Camera, FOLLOW_MIN_SCALE, firstCamera, fitCamera, inView, revealCamera, topCenterX } from "./camera";
import { drawEdges } from "./drawEdges";
import { drawBoxes, drawItems } from "./drawNodes";
import type { Frame, NodeOverlay, Paint } from "./frame";
import { type Hit, hitTest } from "./hitTest";
import { drawOverview, OVERVIEW_FONT, type OverviewLabel, overviewCandidates, placeOverview } from "./overviewLabels";
import type { Theme } from "./theme";
import { wholeTitles } from "./wholeTitles";
import { DETAIL_MIN_SCALE, OVERVIEW_PX, textLevel } from "./zoomLevels";

export class Renderer {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  cam: Camera = { scale: 1, tx: 20, ty: 20 };
  width = 1;
  height = 1;
  frame: Frame | null = null;
  selected: string | null = null;
  selectedBox: string | null = null; // a module inspected: its box drawn marked while it is open
  hover: string | null = null;
  showShapes = true; // tensor shapes on edges, where they fit (drawEdges.ts)
  overlay: NodeOverlay | null = null;
  theme: Theme;
  drawnItems = 0; // items drawn in the last frame (for tests and benchmarks)
  lastFrameMs = 0;
  overview: OverviewLabel[] = []; // the module names drawn far out in the last frame (semantic zoom)
  minTextPx = 0; // the smallest text drawn in the last frame, in screen px (0: none)
  onDrawn: (() => void) | null = null;
  private raf = 0;

  constructor(canvas: HTMLCanvasElement, theme: Theme) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d")!;
    this.theme = theme;
  }

  /**
   * Sizes the canvas to w x h screen px; false, touching nothing, when that is its size already
   * (a resize observer reporting a size set before). `keep`: what stays put on screen, the middle
   * of the view (a panel opening beside an op centred on) or its left edge (a clicked module,
   * which the next layout's hold places). Resizing clears the canvas: `now` draws at once (a
   * resize observer runs after this frame's animation callbacks), else on the next frame.
   */
  resize(w: number, h: number, opts: { keep?: "middle" | "left"; now?: boolean } = {}): boolean {
    const dpr = window.devicePixelRatio || 1;
    w = Math.max(1, w);
    h = Math.max(1, h);
    const px = [Math.round(w * dpr), Math.round(h * dpr)];
    if (w === this.width && h === this.height && px[0] === this.canvas.width && px[1] === this.canvas.height)
      return false;
    const moved = this.frame && this.width > 1;
    if (opts.keep !== "left" && moved) this.cam = { ...this.cam, tx: this.cam.tx + (w - this.width) / 2 };
    this.width = w;
    this.height = h;
    if (moved) this.wholeTitles();
    [this.canvas.width, this.canvas.height] = px;
    this.canvas.style.width = `${w}px`;
    this.canvas.style.height = `${h}px`;
    if (opts.now ?? true) this.draw();
    else this.request();
    return true;
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
    this.wholeTitles();
    this.request();
  }

  /** First view of a graph (see `firstCamera`): whole if readable, else its inputs at 100%. */
  fitReadable(r: Rect): void {
    const anchor = this.frame ? topCenterX(this.frame.scene.items.values()) : null;
    this.cam = firstCamera(r, this.width, this.height, anchor);
    this.wholeTitles();
    this.request();
  }

  /** The laid-out rect of module `key`: its open box or its collapsed item. */
  groupRect(key: string): Rect | undefined {
    const s = this.frame?.scene;
    return s?.boxes.get(key) ?? s?.items.get(GROUP_PREFIX + key);
  }

  /** Remembers where module `key` sits on screen; the returned call puts it back there
   * after a relayout (a module opened or closed in place). */
  holdOnScreen(key: string): () => void {
    const before = this.groupRect(key);
    const anchor = before ? this.toScreen(before.x + before.w / 2, before.y) : null;
    return () => {
      const after = this.groupRect(key);
      if (!anchor || !after) return;
      const [sx, sy] = this.toScreen(after.x + after.w / 2, after.y);
      this.cam = { ...this.cam, tx: this.cam.tx + anchor[0] - sx, ty: this.cam.ty + anchor[1] - sy };
    };
  }

  /** Marks node `id` (or the collapsed module standing for it) selected; with `center`, moves
   * the camera onto it. True when the camera moved. */
  focusNode(id: string, center: boolean): boolean {
    const f = this.frame;
    this.selected = id ? (f?.vis.rep.get(id) ?? null) : null;
    const r = this.selected ? f?.scene.items.get(this.selected) : undefined;
    if (center && r) this.centerOn(r);
    this.request();
    return !!(center && r);
  }

  /** Hovers module `key` and brings it into view as opening it does (`reveal`), at a zoom
   * where its text reads. */
  focusGroup(key: string): boolean {
    const r = this.groupRect(key);
    if (!r) return false;
    this.hover = GROUP_PREFIX + key;
    if (!inView(this.cam, r, this.width, this.height) && r.w * this.cam.scale <= this.width * 0.9) this.centerOn(r);
    this.reveal(key);
    return true;
  }

  /** Brings module `key` (just opened, or found) into view: the least pan, and a zoom out only
   * as far as text stays readable (revealCamera). A zoom below that is first raised to it. */
  reveal(key: string): boolean {
    const r = this.groupRect(key);
    if (!r) return false;
    const start = this.cam.scale < FOLLOW_MIN_SCALE ? this.zoomedTo(FOLLOW_MIN_SCALE, r) : this.cam;
    this.cam = revealCamera(start, r, this.width, this.height);
    this.wholeTitles(r);
    this.request();
    return true;
  }

  /** `cam` at zoom `scale` about the middle of `r`'s top edge. */
  private zoomedTo(scale: number, r: Rect): Camera {
    const [sx, sy] = this.toScreen(r.x + r.w / 2, r.y);
    return { scale, tx: sx - (r.x + r.w / 2) * scale, ty: sy - r.y * scale };
  }

  centerOn(r: Rect, minScale = 0.8): void {
    const scale = Math.max(this.cam.scale, minScale);
    this.cam = {
      scale,
      tx: this.width / 2 - (r.x + r.w / 2) * scale,
      ty: this.height / 2 - (r.y + r.h / 2) * scale,
    };
    this.wholeTitles(r);
    this.request();
  }

  /**
   * After the widget (not the person) moved the camera: a nudge sideways so that no title is
   * cut at the canvas's left or right edge (wholeTitles.ts), keeping `keep` (by default the
   * selected op, or the inspected module's box) as much on screen as it was, zooming out a
   * little where a row is wider than the view (not below FOLLOW_MIN_SCALE). Only where
   * titles are drawn (not far out, where the overview names modules instead).
   */
  wholeTitles(keep: Rect | null = this.subject()): void {
    const s = this.frame?.scene;
    if (!s || textLevel(this.cam.scale) !== "labels") return;
    const titles = [...s.items.values(), ...s.titles.values()];
    this.cam = wholeTitles(this.cam, titles, this.width, this.height, keep, FOLLOW_MIN_SCALE);
  }

  /** What the person is looking at: the selected item, else the inspected module's box. */
  private subject(): Rect | null {
    const s = this.frame?.scene;
    if (!s) return null;
    if (this.selected) return s.items.get(this.selected) ?? null;
    return this.selectedBox ? (this.groupRect(this.selectedBox) ?? null) : null;
  }

  hitTest(sx: number, sy: number): Hit {
    if (!this.frame) return null;
    const [x, y] = this.toWorld(sx, sy);
    return hitTest(this.frame.scene, x, y);
  }

  draw(): void {
    const t0 = performance.now();
    const ctx = this.ctx;
    const dpr = this.canvas.width / this.width;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = this.theme.bg;
    ctx.fillRect(0, 0, this.width, this.height);
    const f = this.frame;
    this.drawnItems = 0;
    if (!f) return;
    const { scale, tx, ty } = this.cam;
    ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * tx, dpr * ty);
    const [vx0, vy0] = this.toWorld(0, 0);
    const [vx1, vy1] = this.toWorld(this.width, this.height);
    const paint: Paint = {
      ctx,
      theme: this.theme,
      frame: f,
      selected: this.selected,
      selectedBox: this.selectedBox,
      hover: this.hover,
      showShapes: this.showShapes,
      labels: textLevel(scale) === "labels",
      detail: scale >= DETAIL_MIN_SCALE,
      px: 1 / scale,
      overlay: this.overlay,
      inView: (r) => r.x <= vx1 && r.x + r.w >= vx0 && r.y <= vy1 && r.y + r.h >= vy0,
    };
    drawBoxes(paint);
    drawEdges(paint);
    this.drawnItems = drawItems(paint);
    this.overview = [];
    if (paint.labels) this.minTextPx = SMALL_PX * scale;
    else {
      // far out: module names at a readable size instead of op labels (zoomLevels.ts)
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.font = OVERVIEW_FONT;
      const view = { x: 0, y: 0, w: this.width, h: this.height };
      this.overview = placeOverview(overviewCandidates(f, this.cam), (t) => ctx.measureText(t).width, view);
      drawOverview(ctx, this.overview, { bg: this.theme.bg, text: this.theme.text });
      this.minTextPx = this.overview.length ? OVERVIEW_PX : 0;
    }
    this.lastFrameMs = performance.now() - t0;
    this.onDrawn?.();
  }
}
