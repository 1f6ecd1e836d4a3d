// The box of the host around the widget that its automatic height (heightHandle.ts) fills:
// found by walking up from the widget through the page as drawn, through a shadow root to its
// host (marimo renders each anywidget in one), so the host's own boxes are seen from inside it.
import { composedParent } from "../render/composedTree";

/**
 * `px`: the height to fill. `fit`: the whole widget should fit in it (a host's scrolled output,
 * like marimo's, whose height is its own: a maximum, not its content's); else it is a page's or
 * notebook's scrolled panel, where the graph may be taller than what is left of the view.
 */
export interface HostBox {
  px: number;
  fit: boolean;
}

/** What hostBox reads of an element's computed style. */
export type BoxStyle = Pick<CSSStyleDeclaration, "overflowY" | "maxHeight">;

/**
 * The nearest scrolling box around `el`: a host's scrolled output (one with a maximum height in
 * px), or a scrolled panel taller than `el` (an output area that scrolls and has no maximum is as
 * tall as `el`: not one); null if none. Neither's height depends on the widget's: a maximum is
 * the box's own, and a panel's visible height is at most the window's.
 */
export function hostBox(el: HTMLElement, style: (e: Element) => BoxStyle = (e) => getComputedStyle(e)): HostBox | null {
  const { body, documentElement } = el.ownerDocument;
  // what is visible of a panel is within the window, even of one that grows with its content
  const view = documentElement.clientHeight;
  for (let p = composedParent(el); p && p !== body; p = composedParent(p)) {
    const { overflowY, maxHeight } = style(p);
    if (overflowY !== "auto" && overflowY !== "scroll") continue;
    const max = /^(\d+(?:\.\d+)?)px$/.exec(maxHeight);
    if (max) return { px: Number(max[1]), fit: true };
    if (p.clientHeight > el.offsetHeight + 1) return { px: Math.min(p.clientHeight, view), fit: false };
  }
  return null;
}
