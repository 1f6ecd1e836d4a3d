// The facts of the op shown in the inspector: its module and pass, shape, dtype, device and
// size, a collective's or a sharded parameter's facts, the parameters it used, and its
// backward. The cells that describe one output follow the output plotted (a multi-output op).
import type { Gradients } from "../graph/gradients";
import type { ActivationResult, NodeInfo } from "../graph/protocol";
import { collectiveFacts, placementFacts } from "../ranks/collectives";
import { h } from "../render/dom";
import { type FactRow, factsTable } from "./factsTable";
import { fmtBytes, fmtShape } from "./format";

/** The facts table of one pass, with the cells an activation's answer rewrites. */
export class OpFacts {
  readonly el: HTMLTableElement;
  private output = h("tr", "");
  private shape: HTMLElement;
  private dtype: HTMLElement;
  private size: HTMLElement;

  /** `layer`: the node selected; `n`: the pass shown (its unrolled node: in the rolled view a
   * pass may differ in shape, module and parameters, as a folded block's passes run in h.0,
   * h.1, ...); `pass`: its index among the layer's passes; `fn`: what the "function" row
   * says when the op ran in a plain function of the model's code. */
  constructor(layer: NodeInfo, n: NodeInfo, pass: number, g: Gradients | null, fn: string | null = null) {
    const rows: FactRow[] = [];
    const passText = layer.nPasses > 1 ? ` — pass ${pass + 1} of ${layer.nPasses}` : "";
    rows.push(["module", (n.module || "(top level)") + passText]);
    if (fn) rows.push(["function", cell(fn, "inspector-function")]);
    this.shape = cell(fmtShape(n.shape), "inspector-shape");
    this.dtype = cell(n.dtype ?? "—", "inspector-dtype");
    this.size = cell(fmtBytes(n.nbytes), "inspector-size");
    rows.push(["shape", this.shape], ["dtype", this.dtype], ["device", n.device ?? "—"], ["size", this.size]);
    if (n.collective) {
      const [[k, kind], ...more] = collectiveFacts(n.collective, fmtBytes);
      rows.push([k, cell(kind, "inspector-collective")], ...more);
    }
    if (n.placement) {
      const [[k, sharded], ...more] = placementFacts(n.placement, fmtShape);
      rows.push([k, cell(sharded, "inspector-placement")], ...more);
    }
    if (n.params.length) rows.push(["params", paramList(n.params)]);
    if (layer.failed) rows.push(["failed", "this op raised during the forward pass"]);
    const backward = g ? layer.passes.flatMap((p) => g.backwardOf(p)) : [];
    if (backward.length) rows.push(["backward", [...new Set(backward.map((b) => b.gradFn))].join(", ")]);
    this.el = factsTable(rows);
    this.el.dataset.testid = "inspector-facts";
    // "output 1 of 2" above the shape: shown once the kernel says the op has several
    this.output.dataset.testid = "inspector-output";
    this.output.hidden = true;
    this.el.rows[1]?.before(this.output);
  }

  /** The facts of the output plotted: the node's own describe its first output (a gradient
   * is of the first output too); the sizes of all outputs add up to the node's size. */
  showOutput(r: ActivationResult, n: NodeInfo): void {
    const several = r.nOutputs > 1;
    this.output.hidden = !several;
    this.output.replaceChildren(h("th", "", "output"), h("td", "", `${r.output} of ${r.nOutputs}`));
    this.shape.textContent = several ? fmtShape(r.shape) : fmtShape(n.shape);
    this.dtype.textContent = several ? r.dtype : (n.dtype ?? "—");
    this.size.textContent = several ? `${fmtBytes(n.nbytes)}, all ${r.nOutputs} outputs` : fmtBytes(n.nbytes);
  }
}

function cell(text: string, testid: string): HTMLElement {
  const span = h("span", "", text);
  span.dataset.testid = testid;
  return span;
}

/** The parameters an op used, one line each: name and shape. */
function paramList(params: NodeInfo["params"]): HTMLElement {
  const ul = h("div", "lens-params");
  ul.dataset.testid = "inspector-params";
  for (const [name, shape] of params) {
    const line = h("div", "lens-param");
    line.title = `${name} ${fmtShape(shape)}`;
    line.append(h("span", "lens-mono", name), h("span", "lens-muted", ` ${fmtShape(shape)}`));
    ul.append(line);
  }
  return ul;
}
