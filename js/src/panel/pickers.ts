// Pickers of one index along a dim (batch item, head): a slider with its caption. Captions
// read "batch 2 of 4" (indices from 0, as in torch), as the kernel's notes do.
import { h } from "../render/dom";

/** "head 2 of 4": the one way a picked index is written in the widget. */
export function indexCaption(name: string, index: number, size: number): string {
  return `${name} ${index} of ${size}`;
}

/** A slider over [0, size) captioned with `indexCaption`; `onPick` fires on release. */
export function indexSlider(
  name: string,
  index: number,
  size: number,
  testid: string,
  onPick: (i: number) => void,
): HTMLElement {
  const wrap = h("label", "lens-slider");
  const caption = h("span", "lens-mono", indexCaption(name, index, size));
  caption.dataset.testid = `${testid}-caption`;
  const input = document.createElement("input");
  input.type = "range";
  input.min = "0";
  input.max = String(size - 1);
  input.value = String(index);
  input.dataset.testid = testid;
  input.setAttribute("aria-label", name);
  input.oninput = () => (caption.textContent = indexCaption(name, Number(input.value), size));
  input.onchange = () => onPick(Number(input.value));
  wrap.append(caption, input);
  return wrap;
}
