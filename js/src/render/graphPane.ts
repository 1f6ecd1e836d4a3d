// The graph area: the canvas (drawn by the Renderer and kept at its box's size), the busy
// indicator over it, and a strip below with the node count, the zoom and the legend, so
// those never cover nodes.
import { bindMinimapInput } from "../controls/minimapInput";
import { fmtCount, fmtPercent } from "../panel/format";
import { h } from "./dom";
import { legend } from "./legend";
import { Minimap } from "./minimap";
import { Renderer } from "./renderer";
import type { Theme } from "./theme";

// a narrower canvas keeps its left edge and is drawn on the next frame (Renderer.resize)
const NARROW = { keep: "left", now: false } as const;

export class GraphPane {
  readonly el = h("div", "lens-graph-col");
  readonly canvas = document.createElement("canvas");
  readonly renderer: Renderer;
  readonly minimap: Minimap;
  private wrap = h("div", "lens-canvas-wrap");
  private busy = h("div", "lens-busy");
  private overlay = h("div", "lens-overlay");
  /** Beside the nodes count: notes on what the graph folds away (wiring/passThrough.ts). */
  readonly notes = h("span", "lens-overlay");
  private legend: HTMLElement;
  /** "Ctrl+scroll or click to zoom", shown over the canvas when the wheel scrolls the page. */
  readonly wheelHint = h("div", "lens-wheel-hint", "Ctrl+scroll or click to zoom");
  private ro: ResizeObserver;
  private layoutRunning = false;
  private sizeDue = false; // the canvas narrows with the layout under way (narrowBeside)
  /** Called after the canvas took a new size (the widget's width or height changed). */
  onResize: (() => void) | null = null;

  constructor(theme: Theme) {
    this.canvas.dataset.testid = "graph-canvas";
    this.canvas.tabIndex = 0;
    this.wheelHint.dataset.testid = "wheel-hint";
    this.wheelHint.hidden = true;
    this.wrap.append(this.canvas, this.busy, this.wheelHint);
    const footer = h("div", "lens-footer");
    footer.dataset.testid = "graph-footer";
    this.legend = legend(theme);
    footer.append(this.overlay, this.notes, this.legend);
    this.el.append(this.wrap, footer);
    this.busy.hidden = true;
    this.busy.dataset.testid = "layout-busy";
    this.renderer = new Renderer(this.canvas, theme);
    this.minimap = new Minimap(this.renderer);
    this.wrap.append(this.minimap.canvas);
    // The canvas is sized to its box, so nothing in the box may size it: all it holds lies out
    // of flow, and the box's height is the graph row's (the height handle's), its width the
    // widget's. Inline, not only in the stylesheet: in a host that never applied the widget's
    // rules (marimo's shadow root, before they travelled with `el`), the in-flow canvas and
    // minimap made the box taller on each resize, without end. Without the rules the box now
    // has no height and nothing is drawn, which ResizeObserver's hidden case already handles.
    this.wrap.style.position = "relative";
    this.wrap.style.overflow = "hidden";
    for (const child of [this.canvas, this.minimap.canvas, this.busy, this.wheelHint])
      child.style.position = "absolute";
    Object.assign(this.canvas.style, { left: "0", top: "0" });
    bindMinimapInput(this.minimap, this.renderer);
    this.renderer.onDrawn = () => {
      this.updateOverlay();
      this.minimap.draw();
    };
    this.ro = new ResizeObserver(() => {
      const { clientWidth: w, clientHeight: h } = this.wrap;
      // hidden (another JupyterLab tab, a collapsed output): no size to draw at. Resizing to
      // 0 and back shifted the view by half its width; keep it as it was until shown again.
      // A size the next layout takes (narrowBeside) waits for it
      if (w > 0 && h > 0 && !this.sizeDue) {
        this.renderer.resize(w, h);
        this.onResize?.();
      }
    });
    this.ro.observe(this.wrap);
  }

  /** Sizes the canvas to its box now (once the pane is in the page); `fallback` where it has no
   * size yet; `opts` as Renderer.resize's. */
  fitCanvas(fallback: { w: number; h: number }, opts?: Parameters<Renderer["resize"]>[2]): void {
    this.sizeDue = false;
    this.renderer.resize(this.wrap.clientWidth || fallback.w, this.wrap.clientHeight || fallback.h, opts);
  }

  /**
   * A panel opened beside the graph (a module's inspector, on a click that opens or closes the
   * module). With a layout under way the canvas takes its narrower size when that layout is
   * placed (`settle`): one canvas resize and one draw for both, the panel covering the canvas's
   * right side meanwhile. With none, it narrows now. Either way it keeps its left edge, so what
   * was clicked stays under the pointer, and only its width changes, which the layout does not
   * depend on (tall chains wrap by the widget's width): nothing is laid out again. True when it
   * narrowed now.
   */
  narrowBeside(): boolean {
    if (this.layoutRunning) {
      this.sizeDue = true;
      return false;
    }
    this.fitCanvas({ w: this.renderer.width, h: this.renderer.height }, NARROW);
    return true;
  }

  /** Before a layout is placed, or when none is running any more: a size narrowBeside put off. */
  settle(): void {
    if (this.sizeDue) this.fitCanvas({ w: this.renderer.width, h: this.renderer.height }, NARROW);
  }

  /** Fits the laid-out graph in view (the toolbar's Fit). */
  fit(): void {
    const f = this.renderer.frame;
    if (f) this.renderer.fit(f.scene.bounds);
  }

  /** Tensor shapes on edges, or not. */
  showShapes(on: boolean): void {
    this.renderer.showShapes = on;
    this.renderer.request();
  }

  /** Redraws the graph and its legend in `theme`'s colours. */
  setTheme(theme: Theme): void {
    this.renderer.theme = theme;
    const next = legend(theme);
    this.legend.replaceWith(next);
    this.legend = next;
    this.renderer.request();
  }

  /** Layouts running or not: the busy indicator, and a size put off by narrowBeside. */
  showBusy(busy: boolean): void {
    this.busy.hidden = !busy;
    this.busy.textContent = "laying out…";
    this.layoutRunning = busy;
    if (!busy) this.settle(); // the layout failed or was superseded: no placing to wait for
  }

  private updateOverlay(): void {
    const f = this.renderer.frame;
    this.overlay.textContent = f
      ? `${fmtCount(f.vis.items.length)} nodes shown · zoom ${fmtPercent(this.renderer.cam.scale, 0)}`
      : "";
  }

  dispose(): void {
    this.ro.disconnect();
    this.renderer.dispose();
  }
}
