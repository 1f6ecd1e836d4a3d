// The graph's height: the `height` trait (LensWidget(..., height=...)) and a handle under the
// graph that drags it. With no height set, the graph fills the visible height of the notebook
// around the widget (its scrolled panel) less the widget's own bars, so a model's first view
// opens at a zoom where text reads (620 px where there is no such panel); in a host's scrolled
// output (marimo's), the widget fits in it. A drag resizes live and, when let go, writes the
// trait, so the height is kept with the widget (and in a saved notebook's widget state).
import type { WidgetModel } from "../kernel/widgetModel";
import { h } from "../render/dom";
import { type HostBox, hostBox } from "./hostBox";

export const DEFAULT_HEIGHT = 620;
// the same bounds as the Python trait (widget/lens_widget.py)
export const MIN_HEIGHT = 200;
export const MAX_HEIGHT = 5000;
const KEY_STEP = 40;
const AUTO_MAX = 1000;
const AUTO_MARGIN = 40; // the cell's edges and a little of what comes before and after
const FIT_MIN = 360; // smaller, a first view's text would not read
const FIT_MARGIN = 8; // the output box's padding and borders

/**
 * The graph's height with none set, from the host's box around the widget (hostBox) and the
 * widget's bars (`chrome`): in a host's scrolled output (marimo's), the whole widget fits in it,
 * down to FIT_MIN (below that the output scrolls, as for any tall output); in a notebook's
 * panel, its visible height less a margin, within DEFAULT_HEIGHT..AUTO_MAX; with no box, the default.
 */
export function autoHeight(box: HostBox | null, chrome: number): number {
  if (box === null) return DEFAULT_HEIGHT;
  if (box.fit) return Math.round(Math.min(AUTO_MAX, Math.max(FIT_MIN, box.px - chrome - FIT_MARGIN)));
  return Math.round(Math.min(AUTO_MAX, Math.max(DEFAULT_HEIGHT, box.px - chrome - AUTO_MARGIN)));
}

/** A usable height from a trait value: the default for none or nonsense, else within bounds. */
export function graphHeight(value: unknown): number {
  const v = typeof value === "number" && Number.isFinite(value) ? value : DEFAULT_HEIGHT;
  return Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, v)));
}

type HeightModel = Pick<WidgetModel, "get" | "set" | "save_changes" | "on" | "off">;

export class HeightHandle {
  readonly el = h("div", "lens-resize");
  private height: number;
  private dragging = false; // a drag sets the height; the host's does not meanwhile
  private readonly onTrait = (): void => this.apply(this.chosen() ?? this.height);

  /** `target`: the element whose height is the graph's (the canvas row). */
  constructor(
    private model: HeightModel,
    private target: HTMLElement,
  ) {
    this.height = this.chosen() ?? DEFAULT_HEIGHT;
    this.el.dataset.testid = "resize-graph";
    this.el.title = "Drag to change the graph's height";
    this.el.setAttribute("role", "separator");
    this.el.setAttribute("aria-orientation", "horizontal");
    this.el.setAttribute("aria-label", "graph height");
    this.el.tabIndex = 0;
    this.apply(this.height);
    model.on("change:height", this.onTrait);
    this.el.addEventListener("pointerdown", (e) => this.drag(e));
    this.el.addEventListener("keydown", (e) => {
      const step = e.key === "ArrowDown" ? KEY_STEP : e.key === "ArrowUp" ? -KEY_STEP : 0;
      if (!step) return;
      e.preventDefault();
      this.commit(graphHeight(this.height + step));
    });
  }

  /** The height set in the trait (by the user or a drag), or null where none is. */
  private chosen(): number | null {
    const v = this.model.get("height");
    return v === null || v === undefined ? null : graphHeight(v);
  }

  /**
   * With no height set, the graph's height from the panel around `root` (the widget, now in
   * the page): called before a layout, so the first view is laid out for it. True if it changed.
   */
  fitHost(root: HTMLElement): boolean {
    if (this.chosen() !== null || this.dragging || !root.isConnected) return false;
    const chrome = root.offsetHeight - this.target.offsetHeight;
    const px = autoHeight(hostBox(root), chrome);
    if (px === this.height) return false;
    this.apply(px);
    return true;
  }

  private apply(px: number): void {
    this.height = px;
    this.target.style.height = `${px}px`;
    this.el.setAttribute("aria-valuenow", String(px));
  }

  /** The height chosen: shown, and written to the trait (kept with the widget). */
  private commit(px: number): void {
    this.apply(px);
    if (this.model.get("height") === px) return;
    this.model.set("height", px);
    this.model.save_changes();
  }

  private drag(e: PointerEvent): void {
    e.preventDefault();
    const startY = e.clientY;
    const start = this.height;
    this.el.setPointerCapture(e.pointerId);
    this.el.classList.add("lens-resizing");
    this.dragging = true;
    const move = (ev: PointerEvent): void => this.apply(graphHeight(start + ev.clientY - startY));
    const up = (ev: PointerEvent): void => {
      this.el.removeEventListener("pointermove", move);
      this.el.removeEventListener("pointerup", up);
      this.el.removeEventListener("pointercancel", up);
      this.el.classList.remove("lens-resizing");
      this.dragging = false;
      this.commit(graphHeight(start + ev.clientY - startY));
    };
    this.el.addEventListener("pointermove", move);
    this.el.addEventListener("pointerup", up);
    this.el.addEventListener("pointercancel", up);
  }

  dispose(): void {
    this.model.off("change:height", this.onTrait);
  }
}
