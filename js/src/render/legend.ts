// The legend under the canvas: what the node colours of the theme mean.
import { h } from "./dom";
import type { Theme } from "./theme";

/** One legend entry: a colour swatch (`fill`, outlined in `stroke`) and its text. */
export function swatch(fill: string, text: string, stroke: string = fill): HTMLElement {
  const s = h("span", "");
  const sw = h("i", "");
  sw.style.background = fill;
  sw.style.borderColor = stroke;
  s.append(sw, text);
  return s;
}

export function legend(t: Theme): HTMLElement {
  const l = h("div", "lens-legend");
  l.dataset.testid = "legend";
  const item = (fill: string, stroke: string, text: string) => swatch(fill, text, stroke);
  l.append(
    item(t.input, t.inputStroke, "input"),
    item(t.output, t.outputStroke, "output"),
    item(t.hasParams, t.hasParamsStroke, "uses params"),
    item(t.internal, t.paramStroke, "not from input"),
    item(t.collapsed, t.collapsedStroke, "module (click to open)"),
    item(t.failed, t.failedStroke, "failed"),
  );
  return l;
}
