// Pickers the panels and bars share: a select of labelled choices; one index along a dim
// (batch item, head), a slider with its caption; one of a rolled layer's passes. Captions read
// "batch 2 of 4" (indices from 0, as in torch), as the kernel's notes do; passes are counted
// from 1, as the graph's pass labels are.
import { h } from "../render/dom";

/** An `<option>` of `value`, reading `text`. */
export function option(value: string, text: string): HTMLOptionElement {
  const o = h("option", "", text);
  o.value = value;
  return o;
}

/** A `lens-select` of `choices` ([value, text]), the first picked; `title` is its tooltip. */
export function choicePicker<T extends string>(
  testid: string,
  choices: readonly (readonly [T, string])[],
  title?: string,
): HTMLSelectElement {
  const s = h("select", "lens-select");
  s.dataset.testid = testid;
  if (title !== undefined) s.title = title;
  s.append(...choices.map(([value, text]) => option(value, text)));
  return s;
}

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

/** The pass of a rolled layer to show: "pass 2 — linear_2_7:2" for each of `passes` (unrolled
 * ids); `onPick` gets the index picked. */
export function passPicker(passes: string[], index: number, onPick: (i: number) => void): HTMLSelectElement {
  const sel = choicePicker(
    "pass-picker",
    passes.map((pid, i) => [String(i), `pass ${i + 1} — ${pid}`]),
  );
  sel.value = String(index);
  sel.onchange = () => onPick(Number(sel.value));
  return sel;
}
