// The module inspector's outputs: every tensor the module returned, each named by its path in
// the value returned ("boxes", "0", "pool") with its shape, and a picker of the one plotted.
// Read from the payload's list (graph/moduleOutputs.ts), as the box's shape line is.
import { outputName } from "../graph/moduleOutputs";
import type { ModuleOutputInfo } from "../graph/protocol";
import { h } from "../render/dom";
import { fmtShape } from "./format";
import { choicePicker } from "./pickers";

/** "outputs (2)" and a button per output (a click selects the node that made it). */
export function moduleOutputLinks(outputs: readonly ModuleOutputInfo[], select: (id: string) => void): HTMLElement {
  const box = h("div", "lens-links");
  box.dataset.testid = "module-outputs";
  box.append(h("span", "lens-links-label", `${outputs.length === 1 ? "output" : "outputs"} (${outputs.length})`));
  for (const o of outputs) {
    const a = h("button", "lens-link", `${outputName(o)} ${fmtShape(o.shape)}`);
    a.title = o.output ? `${o.node}, its output ${o.output}` : o.node;
    a.dataset.id = o.node;
    a.dataset.path = o.path;
    a.onclick = () => select(o.node);
    box.append(a);
  }
  return box;
}

/** The output plotted, one of several: "boxes — (10, 4)"; `onPick` gets its index. */
export function moduleOutputPicker(
  outputs: readonly ModuleOutputInfo[],
  picked: number,
  onPick: (i: number) => void,
): HTMLSelectElement {
  const sel = choicePicker(
    "module-output-picker",
    outputs.map((o, i) => [String(i), `${outputName(o)} — ${fmtShape(o.shape)}`] as const),
    "which of the module's outputs is plotted",
  );
  sel.value = String(picked);
  sel.onchange = () => onPick(Number(sel.value));
  return sel;
}
