// The graph area: the canvas (drawn by the Renderer and kept at its box's size), the busy
// indicator over it, and a strip below with the node count, the zoom and the legend, so
// those never cover nodes.
import { bindMinimapInput } from "../controls/minimapInput";
import { fmtCount } from "../panel/format";
import { h } from "./dom";
import { legend } from "./legend";
import { Minimap } from "./minimap";
import { Renderer } from "./renderer";
import type { Theme } from "./theme";

export class GraphPane {
  readonly el = h("div", "lens-graph-col");
  readonly canvas = document.createElement("canvas");
  readonly renderer: Renderer;
  readonly minimap: Minimap;
  private wrap = h("div", "lens-canvas-wrap");
  private busy = h("div", "lens-busy");
  private overlay = h("div", "lens-overlay");
  private legend: HTMLElement;
  /** "Ctrl+scroll or click to zoom", shown over the canvas when the wheel scrolls the page. */
  readonly wheelHint = h("div", "lens-wheel-hint", "Ctrl+scroll or click to zoom");
  private ro: ResizeObserver;
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
    footer.append(this.overlay, this.legend);
    this.el.append(this.wrap, footer);
    this.busy.hidden = true;
    this.busy.dataset.testid = "layout-busy";
    this.renderer = new Renderer(this.canvas, theme);
    this.minimap = new Minimap(this.renderer);
    this.wrap.append(this.minimap.canvas);
    bindMinimapInput(this.minimap, this.renderer);
    this.renderer.onDrawn = () => {
      this.updateOverlay();
      this.minimap.draw();
    };
    this.ro = new ResizeObserver(() => {
      const { clientWidth: w, clientHeight: h } = this.wrap;
      // hidden (another JupyterLab tab, a collapsed output): no size to draw at. Resizing to
      // 0 and back shifted the view by half its width; keep it as it was until shown again
      if (w > 0 && h > 0) {
        this.renderer.resize(w, h);
        this.onResize?.();
      }
    });
    this.ro.observe(this.wrap);
  }

  /** Sizes the canvas to its box now (once the pane is in the page); `fallback` where it has no size yet. */
  fitCanvas(fallback: { w: number; h: number }): void {
    this.renderer.resize(this.wrap.clientWidth || fallback.w, this.wrap.clientHeight || fallback.h);
  }

  /** Redraws the graph and its legend in `theme`'s colours. */
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

  setTheme(theme: Theme): void {
    this.renderer.theme = theme;
    const next = legend(theme);
    this.legend.replaceWith(next);
    this.legend = next;
    this.renderer.request();
  }

  showBusy(busy: boolean): void {
    this.busy.hidden = !busy;
    this.busy.textContent = "laying out…";
  }

  private updateOverlay(): void {
    const f = this.renderer.frame;
    this.overlay.textContent = f
      ? `${fmtCount(f.vis.items.length)} nodes shown · zoom ${Math.round(this.renderer.cam.scale * 100)}%`
      : "";
  }

  dispose(): void {
    this.ro.disconnect();
    this.renderer.dispose();
  }
}
