// The overview in the canvas's corner: the whole laid-out graph in miniature and the part the
// view shows, drawn only when part of the graph is off screen. The miniature is drawn once
// per layout (into an offscreen canvas); each camera move only redraws the view's frame.
import { BOX_HEADER } from "../layout/labels";
import type { Rect } from "../layout/scenePlan";
import type { Frame } from "./frame";
import { drawMinimapLabels, MINI_FONT, minimapLabels } from "./minimapLabels";
import { MARGIN, type MiniPlace, placeMinimap } from "./minimapPlace";
import type { Renderer } from "./renderer";
import type { Theme } from "./theme";

const MAX_W = 180;
const MAX_H = 140;
const MIN_SIDE = 36;
const MIN_W = 110; // a tall narrow graph's overview keeps room beside it for the modules' names
const PAD = 4;

/** Where the scene's bounds go in a minimap: its size and the world -> minimap mapping. */
export interface MiniFit {
  w: number;
  h: number;
  scale: number; // minimap px per world unit
  ox: number; // minimap x of world x = bounds.x
  oy: number;
}

/** `shrink`: a smaller overview, where the full one would cover what is shown (minimapPlace.ts). */
export function miniFit(bounds: Rect, shrink = 1): MiniFit {
  const [maxW, maxH, minW] = [MAX_W * shrink, MAX_H * shrink, MIN_W * shrink];
  const scale = Math.min((maxW - 2 * PAD) / Math.max(1, bounds.w), (maxH - 2 * PAD) / Math.max(1, bounds.h));
  const w = Math.max(minW, Math.round(bounds.w * scale + 2 * PAD));
  const h = Math.max(MIN_SIDE * shrink, Math.round(bounds.h * scale + 2 * PAD));
  return { w, h, scale, ox: (w - bounds.w * scale) / 2, oy: (h - bounds.h * scale) / 2 };
}

/** True when some of `bounds` lies outside the view (a slack of a few pixels aside). */
export function partlyOffScreen(bounds: Rect, view: Rect): boolean {
  const slack = 4;
  return (
    bounds.x < view.x - slack ||
    bounds.y < view.y - slack ||
    bounds.x + bounds.w > view.x + view.w + slack ||
    bounds.y + bounds.h > view.y + view.h + slack
  );
}

export class Minimap {
  readonly canvas = document.createElement("canvas");
  private ctx: CanvasRenderingContext2D;
  private art = document.createElement("canvas");
  private artOf: { frame: Frame; theme: Theme; dpr: number; shrink: number } | null = null;
  /** Where it is drawn now (canvas px), null while hidden: the tests read it. */
  placed: MiniPlace | null = null;
  private fit: MiniFit | null = null;

  constructor(private renderer: Renderer) {
    this.canvas.className = "lens-minimap";
    this.canvas.dataset.testid = "minimap";
    this.canvas.hidden = true;
    this.canvas.title = "Overview: drag to move the view";
    this.ctx = this.canvas.getContext("2d")!;
  }

  /** The view rectangle in world coordinates. */
  private viewRect(): Rect {
    const r = this.renderer;
    const [x0, y0] = r.toWorld(0, 0);
    const [x1, y1] = r.toWorld(r.width, r.height);
    return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
  }

  draw(): void {
    const f = this.renderer.frame;
    const bounds = f?.scene.bounds;
    const place = f && bounds && partlyOffScreen(bounds, this.viewRect()) ? this.place(f) : null;
    this.placed = place;
    if (!f || !bounds || !place) {
      this.canvas.hidden = true;
      this.fit = null;
      return;
    }
    const dpr = window.devicePixelRatio || 1;
    const fit = miniFit(bounds, place.shrink);
    const theme = this.renderer.theme;
    const art = this.artOf;
    if (!art || art.frame !== f || art.theme !== theme || art.dpr !== dpr || art.shrink !== place.shrink) {
      this.paintArt(f, fit, theme, dpr);
      this.artOf = { frame: f, theme, dpr, shrink: place.shrink };
    }
    const style = this.canvas.style;
    style.left = place.corner.endsWith("left") ? `${MARGIN}px` : "auto";
    style.right = place.corner.endsWith("right") ? `${MARGIN}px` : "auto";
    style.top = place.corner.startsWith("top") ? `${MARGIN}px` : "auto";
    style.bottom = place.corner.startsWith("bottom") ? `${MARGIN}px` : "auto";
    this.fit = fit;
    if (this.canvas.width !== fit.w * dpr || this.canvas.height !== fit.h * dpr) {
      this.canvas.width = fit.w * dpr;
      this.canvas.height = fit.h * dpr;
      this.canvas.style.width = `${fit.w}px`;
      this.canvas.style.height = `${fit.h}px`;
    }
    this.canvas.hidden = false;
    const ctx = this.ctx;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.drawImage(this.art, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const v = this.viewRect();
    const x = fit.ox + (v.x - bounds.x) * fit.scale;
    const y = fit.oy + (v.y - bounds.y) * fit.scale;
    ctx.fillStyle = theme.selected;
    ctx.globalAlpha = 0.12;
    ctx.fillRect(x, y, v.w * fit.scale, v.h * fit.scale);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = theme.selected;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(x, y, v.w * fit.scale, v.h * fit.scale);
  }

  /** A corner where it covers no item and no open box's title on screen (minimapPlace.ts). */
  private place(f: Frame): MiniPlace | null {
    const r = this.renderer;
    const view = { x: 0, y: 0, w: r.width, h: r.height };
    const onScreen = (w: Rect): Rect | null => {
      const [x, y] = r.toScreen(w.x, w.y);
      const s = { x, y, w: w.w * r.cam.scale, h: w.h * r.cam.scale };
      return s.x < view.w && s.y < view.h && s.x + s.w > 0 && s.y + s.h > 0 ? s : null;
    };
    const clear: Rect[] = [];
    for (const it of f.scene.items.values()) {
      const s = onScreen(it);
      if (s) clear.push(s);
    }
    for (const [key, box] of f.scene.boxes) {
      const title = f.scene.titles.get(key) ?? { x: box.x, y: box.y, w: box.w, h: BOX_HEADER };
      const s = onScreen(title);
      if (s) clear.push(s);
    }
    const bounds = f.scene.bounds;
    return placeMinimap(view, (k) => miniFit(bounds, k), clear);
  }

  private paintArt(f: Frame, fit: MiniFit, th: Theme, dpr: number): void {
    this.art.width = fit.w * dpr;
    this.art.height = fit.h * dpr;
    const ctx = this.art.getContext("2d")!;
    const b = f.scene.bounds;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = th.bg;
    ctx.globalAlpha = 0.92;
    ctx.fillRect(0, 0, fit.w, fit.h);
    ctx.globalAlpha = 1;
    const at = (r: Rect): [number, number, number, number] => [
      fit.ox + (r.x - b.x) * fit.scale,
      fit.oy + (r.y - b.y) * fit.scale,
      Math.max(1, r.w * fit.scale),
      Math.max(1, r.h * fit.scale),
    ];
    ctx.strokeStyle = th.groupStroke;
    ctx.lineWidth = 1;
    for (const r of f.scene.boxes.values()) ctx.strokeRect(...at(r));
    for (const it of f.vis.items) {
      const r = f.scene.items.get(it.id);
      if (!r) continue;
      const kind = it.node?.kind;
      ctx.fillStyle =
        kind === "input"
          ? th.inputStroke
          : kind === "output"
            ? th.outputStroke
            : it.group
              ? th.collapsedStroke
              : th.nodeStroke;
      ctx.fillRect(...at(r));
    }
    // the first-level modules by name, and said to a screen reader too
    ctx.font = MINI_FONT;
    const labels = minimapLabels(f, fit, (t) => ctx.measureText(t).width);
    drawMinimapLabels(ctx, labels, { bg: th.bg, text: th.text });
    this.canvas.setAttribute("aria-label", `Overview: ${labels.map((l) => l.text).join(", ")}`);
  }

  /** The world point under minimap pixel (mx, my); null while hidden. */
  worldAt(mx: number, my: number): [number, number] | null {
    const b = this.renderer.frame?.scene.bounds;
    if (!this.fit || !b) return null;
    return [b.x + (mx - this.fit.ox) / this.fit.scale, b.y + (my - this.fit.oy) / this.fit.scale];
  }

  /** Moves the view so that its centre is at world (x, y), at the same zoom. */
  centreOn(x: number, y: number): void {
    const r = this.renderer;
    r.cam = { ...r.cam, tx: r.width / 2 - x * r.cam.scale, ty: r.height / 2 - y * r.cam.scale };
    r.request();
  }
}
