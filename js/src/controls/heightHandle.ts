// The graph's height: the `height` trait (LensWidget(..., height=...), default 620 px) and a
// handle under the graph that drags it. A drag resizes live and, when let go, writes the
// trait, so the height is kept with the widget (and in a saved notebook's widget state).
import type { WidgetModel } from "../kernel/widgetModel";
import { h } from "../render/dom";

export const DEFAULT_HEIGHT = 620;
// the same bounds as the Python trait (widget/lens_widget.py)
export const MIN_HEIGHT = 200;
export const MAX_HEIGHT = 5000;
const KEY_STEP = 40;

/** A usable height from a trait value: the default for none or nonsense, else within bounds. */
export function graphHeight(value: unknown): number {
  const v = typeof value === "number" && Number.isFinite(value) ? value : DEFAULT_HEIGHT;
  return Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, v)));
}

type HeightModel = Pick<WidgetModel, "get" | "set" | "save_changes" | "on" | "off">;

export class HeightHandle {
  readonly el = h("div", "lens-resize");
  private height: number;
  private readonly onTrait = (): void => this.apply(graphHeight(this.model.get("height")));

  /** `target`: the element whose height is the graph's (the canvas row). */
  constructor(
    private model: HeightModel,
    private target: HTMLElement,
  ) {
    this.height = graphHeight(model.get("height"));
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

  private apply(px: number): void {
    this.height = px;
    this.target.style.height = `${px}px`;
    this.el.setAttribute("aria-valuenow", String(px));
  }

  /** The height chosen: shown, and written to the trait (kept with the widget). */
  private commit(px: number): void {
    this.apply(px);
    if (graphHeight(this.model.get("height")) === px && this.model.get("height") === px) return;
    this.model.set("height", px);
    this.model.save_changes();
  }

  private drag(e: PointerEvent): void {
    e.preventDefault();
    const startY = e.clientY;
    const start = this.height;
    this.el.setPointerCapture(e.pointerId);
    this.el.classList.add("lens-resizing");
    const move = (ev: PointerEvent): void => this.apply(graphHeight(start + ev.clientY - startY));
    const up = (ev: PointerEvent): void => {
      this.el.removeEventListener("pointermove", move);
      this.el.removeEventListener("pointerup", up);
      this.el.removeEventListener("pointercancel", up);
      this.el.classList.remove("lens-resizing");
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
