// The inspector's "ablate" section: zero the op's output, or replace it by its mean over a
// chosen dim, and see the comparison clean vs ablated in one click (the kernel re-traces the
// model with `intervene=`). Errors (no model to re-run, a refused request) show here.

import type { AblateRequest, ActivationResult, NodeInfo } from "../graph/protocol";
import type { OnWaiting } from "../kernel/messages";
import { h } from "../render/dom";
import { choicePicker } from "./pickers";

export type AblateParams = AblateRequest["params"];

export interface AblateDeps {
  ablate: (p: AblateParams, onWaiting: OnWaiting) => Promise<void>;
  noRerun: () => string | null; // ablating re-runs the model: hidden where it cannot
}

export class AblateSection {
  readonly el = h("div", "lens-act lens-ablate");
  private kind = choicePicker("ablate-kind", [
    ["zero", "zero"],
    ["mean", "mean over"],
  ]);
  private dim = document.createElement("select");
  private button = h("button", "lens-btn", "Ablate");
  private status = h("div", "lens-act-status");
  private node: NodeInfo | null = null;
  private dimNames: string[] = [];
  private token = 0;

  constructor(private deps: AblateDeps) {
    this.el.dataset.testid = "ablate";
    const title = h("div", "lens-section-title");
    title.append(h("span", "", "ablate"));
    this.kind.onchange = () => (this.dim.hidden = this.kind.value !== "mean");
    this.dim.className = "lens-select";
    this.dim.dataset.testid = "ablate-dim";
    this.dim.hidden = true;
    this.button.dataset.testid = "ablate-button";
    this.button.title = "Re-run the model with this op's output replaced, and compare with the clean run";
    this.button.onclick = () => this.run();
    this.status.dataset.testid = "ablate-status";
    const row = h("div", "lens-act-controls");
    row.append(this.kind, this.dim, this.button);
    this.el.append(title, row, this.status);
  }

  /** The op shown (`node`: its id is the target: a pass, or a rolled layer for every pass). */
  show(node: NodeInfo): void {
    const changed = this.node?.id !== node.id;
    this.node = node;
    this.el.hidden = node.kind !== "op" || !node.shape || node.failed || this.deps.noRerun() !== null;
    // a rolled layer and its first pass share an id: after a view switch the same id
    // names one op or every pass, and the kernel ablates what the view shows
    this.button.textContent = node.passes.length > 1 ? `Ablate all ${node.passes.length} passes` : "Ablate";
    if (!changed) return;
    this.token++;
    this.dimNames = [];
    this.setStatus("", "idle");
    this.button.disabled = false;
    this.fillDims();
  }

  /** What each dim is, from the op's activation once it is plotted ("token", "feature"). */
  learnDims(result: ActivationResult): void {
    const n = this.node;
    if (!n || result.output !== 0 || !n.passes.includes(result.id)) return;
    if (result.dims.join("\u0000") === this.dimNames.join("\u0000")) return;
    this.dimNames = result.dims;
    this.fillDims();
  }

  private fillDims(): void {
    const shape = this.node?.shape ?? [];
    const keep = this.dim.value;
    this.dim.replaceChildren(
      ...shape.map((size, i) => {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = `${this.dimNames[i] ?? `dim ${i}`} (dim ${i}, size ${size})`;
        return o;
      }),
    );
    if (keep && Number(keep) < shape.length) this.dim.value = keep;
  }

  private run(): void {
    const n = this.node;
    if (!n) return;
    const params: AblateParams =
      this.kind.value === "mean" ? { id: n.id, kind: "mean", dim: Number(this.dim.value) } : { id: n.id, kind: "zero" };
    const token = ++this.token;
    this.button.disabled = true;
    this.setStatus("re-running the model with the ablation…", "loading");
    const waiting: OnWaiting = (reason) => {
      if (token === this.token) this.setStatus(`${reason}: the ablation starts when it finishes…`, "waiting");
    };
    this.deps.ablate(params, waiting).then(
      () => {
        if (token !== this.token) return;
        this.button.disabled = false;
        this.setStatus("", "done");
      },
      (e: Error) => {
        if (token !== this.token) return;
        this.button.disabled = false;
        this.setStatus(`ablation failed: ${e.message}`, "error");
      },
    );
  }

  private setStatus(text: string, state: string): void {
    this.status.textContent = text;
    this.status.className = `lens-act-status lens-act-${state}`;
    this.el.dataset.state = state;
  }
}
