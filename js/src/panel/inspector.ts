// Side panel for the selected node: its facts, links to neighbours, and what the kernel
// sends on demand: the attention weights of attention ops, and the node's activation.

import { functionGroupOf, functionText } from "../graph/functionGroup";
import type { Gradients } from "../graph/gradients";
import type { ActivationResult, ModuleDetailsResult, NodeInfo, OpDetailsResult } from "../graph/protocol";
import type { GraphModel } from "../graph/tree";
import type { Activation, AttentionMap, OnWaiting } from "../kernel/messages";
import { breakablePath, h } from "../render/dom";
import type { Theme } from "../render/theme";
import { type AblateParams, AblateSection } from "./ablateSection";
import { ActivationPanel, type ActivationParams } from "./activationPanel";
import { AttentionPanel, type AttentionParams } from "./attentionPanel";
import { CallSection } from "./callSection";
import { shortPath } from "./format";
import { inspectorHead } from "./inspectorHead";
import { moduleFacts } from "./moduleFacts";
import { moduleOutputLinks, moduleOutputPicker } from "./moduleOutputList";
import { nodeLinks } from "./nodeLinks";
import { OpFacts } from "./opFacts";
import { passPicker } from "./pickers";
import { resizePlots } from "./plots";
import { ValueSwitch } from "./valueSwitch";

export type { ActivationParams } from "./activationPanel";

export interface InspectorDeps {
  theme: () => Theme;
  select: (id: string) => void;
  close: () => void;
  fetchActivation: (p: ActivationParams, onSlow: () => void) => Promise<Activation>;
  fetchAttention: (p: AttentionParams, onSlow: () => void) => Promise<AttentionMap>;
  rerun: (id: string, onWaiting: OnWaiting) => Promise<void>;
  noRerun: () => string | null; // why the model cannot be re-run (no model, no kernel), or null
  ablate: (p: AblateParams, onWaiting: OnWaiting) => Promise<void>;
  unrolledNode: (id: string) => NodeInfo | undefined;
  unrolledParents: (id: string) => string[];
  gradients: () => Gradients | null; // of the log shown; null without a traced backward
  noSide: (id: string) => string | null; // why a comparison's side picked has no value of the op
  sideLabel: () => string | null; // in a comparison, the side plotted ("A − B")
  fetchOpDetails: (id: string) => Promise<OpDetailsResult>; // the op's whole call ("opDetails")
  fetchModuleDetails: (address: string) => Promise<ModuleDetailsResult>; // ("moduleDetails")
  selectUnrolled: (id: string) => void; // selects a node named by its unrolled id, in the view shown
}

/** A module shown in the inspector: its address and, in the unrolled view, the pass (1-based). */
export interface ModuleShown {
  address: string;
  pass: number | null;
  note?: string; // what else it stands for ("the first of 12 blocks folded here")
  key?: string; // the graph's group it was picked from
}

export class Inspector {
  readonly el: HTMLElement;
  private body: HTMLElement;
  private model: GraphModel | null = null;
  private node: NodeInfo | null = null;
  private pass = 0; // index into node.passes
  private activation: ActivationPanel;
  private attention: AttentionPanel;
  private valueSwitch = new ValueSwitch(() => this.node && this.loadPass(true));
  private ablate: AblateSection;
  private facts: OpFacts | null = null; // of the pass shown
  private ro: ResizeObserver;
  private width = 0;
  private call: CallSection;
  private codeEl: HTMLElement | null = null; // the source statement shown
  private module: ModuleShown | null = null; // a module shown instead of a node
  private moduleToken = 0;

  constructor(private deps: InspectorDeps) {
    this.el = document.createElement("aside");
    this.el.className = "lens-inspector";
    this.el.dataset.testid = "inspector";
    this.body = document.createElement("div");
    this.body.className = "lens-inspector-body";
    this.el.appendChild(this.body);
    this.el.hidden = true;
    this.ablate = new AblateSection(deps);
    // the ablate section names dims as the plotted activation does ("token", "feature")
    this.activation = new ActivationPanel({
      ...deps,
      fetchActivation: (p, onSlow) =>
        deps.fetchActivation(p, onSlow).then((act) => {
          this.ablate.learnDims(act.result);
          return act;
        }),
      shown: (r) => this.showOutputFacts(r),
    });
    this.attention = new AttentionPanel(deps);
    this.call = new CallSection({
      fetchOpDetails: (id) => deps.fetchOpDetails(id),
      select: (id) => deps.selectUnrolled(id),
      label: (id) => deps.unrolledNode(id)?.func ?? id,
    });
    // the panel narrows with the widget (and when its scrollbar appears): plots follow
    this.ro = new ResizeObserver(() => {
      const w = this.body.clientWidth;
      if (w !== this.width) {
        this.width = w;
        resizePlots(this.body);
      }
    });
    this.ro.observe(this.body);
  }

  get nodeId(): string | null {
    return this.node?.id ?? null;
  }

  /** The unrolled id of the pass shown (the op itself in the unrolled view). */
  get shownPass(): string | null {
    return this.node ? (this.node.passes[this.pass] ?? this.node.id) : null;
  }

  show(model: GraphModel, id: string | null): void {
    const n = id ? model.nodes.get(id) : undefined;
    this.model = model;
    if (!n && this.module && !id) return; // a module is shown: the node selection was cleared for it
    this.module = null;
    if (!n) {
      this.node = null;
      this.el.hidden = true;
      this.activation.dispose();
      this.attention.dispose();
      return;
    }
    const same = this.node?.id === n.id;
    // the pass shown stays shown across a view switch (an unrolled op <-> its rolled layer)
    const was = this.shownPass;
    this.node = n;
    if (!same) this.pass = was && n.passes.includes(was) ? n.passes.indexOf(was) : 0;
    this.pass = Math.min(this.pass, n.passes.length - 1);
    this.el.hidden = false;
    this.ablate.show(n);
    this.render();
    this.loadPass(same);
  }

  /** Replots what is shown in the theme's colours (the host switched themes). */
  redraw(): void {
    if (this.el.hidden) return;
    this.activation.redraw();
    this.attention.redraw();
  }

  /** The module inspector: class, settings, parameters, totals and the plot of its output
   * (`pass`: the pass whose output is plotted, 1-based; null: the first). */
  showModule(model: GraphModel, shown: ModuleShown, className: string): void {
    this.model = model;
    this.node = null;
    this.module = shown;
    this.el.hidden = false;
    this.activation.clear();
    this.activation.section.head.querySelector("[data-testid=module-output-picker]")?.remove();
    this.attention.dispose();
    this.call.clear();
    const name = h("span", "lens-insp-func", shown.address || className);
    name.title = shown.address;
    name.dataset.testid = "module-title";
    const head = inspectorHead("module", name, () => {
      this.module = null;
      this.deps.close();
      this.el.hidden = true;
    });
    const facts = h("div", "lens-muted", "module…");
    facts.dataset.testid = "module-inspector";
    const idLine = h("div", "lens-insp-id", shown.note ? `${className} · ${shown.note}` : className);
    idLine.dataset.testid = "module-id";
    this.body.replaceChildren(head, idLine, facts);
    this.el.dataset.module = shown.address;
    const token = ++this.moduleToken;
    this.deps
      .fetchModuleDetails(shown.address)
      .then((d) => {
        if (token !== this.moduleToken || this.module !== shown) return;
        const pass = Math.min(Math.max(shown.pass ?? 1, 1), Math.max(d.outputs.length, 1));
        // every output of that pass, from the payload's list the box's shape line reads
        const outputs = model.modules.get(shown.address)?.outputs?.[pass - 1] ?? [];
        const output = outputs[0]?.node ?? d.outputs[pass - 1];
        const box = moduleFacts(d, output && d.nPasses > 1 ? `output of pass ${pass}` : "");
        box.dataset.testid = "module-inspector";
        facts.replaceWith(box);
        if (!output) return;
        box.append(
          outputs.length
            ? moduleOutputLinks(outputs, (id) => this.deps.selectUnrolled(id))
            : this.links("output", [output], true),
        );
        this.body.append(this.activation.el);
        const plot = (i: number): void => {
          const o = outputs[i];
          const id = o?.node ?? output;
          const node = this.deps.unrolledNode(id);
          this.activation.load(id, node?.saved ?? true, undefined, node?.noValues ?? undefined, false, o?.output);
        };
        if (outputs.length > 1) {
          const head = this.activation.section.head;
          head.querySelector("[data-testid=module-output-picker]")?.remove();
          head.append(moduleOutputPicker(outputs, 0, plot));
        }
        plot(0);
      })
      .catch((e: Error) => {
        if (token !== this.moduleToken) return;
        facts.textContent = `module details: ${e.message}`;
      });
  }

  /** The module shown, or null when a node (or nothing) is. */
  get moduleShown(): ModuleShown | null {
    return this.module;
  }

  private loadPass(keepPicks: boolean): void {
    const n = this.node!;
    const id = n.passes[this.pass] ?? n.id;
    this.el.dataset.module = "";
    if (n.kind === "op" || n.kind === "output") this.call.load(id, (statement) => this.showStatement(statement));
    else this.call.clear();
    if (n.attention) this.attention.load(id, this.inputsSaved(id), keepPicks);
    else this.attention.dispose();
    const g = this.deps.gradients();
    const v = this.valueSwitch;
    const choice = g && {
      value: v.value,
      backwardPass: v.backwardPass,
      reached: !g.noGrad.has(id),
      nPasses: g.completedPasses.length,
    };
    const node = this.nodeFor(id);
    this.activation.load(
      id,
      node.saved,
      choice ?? undefined,
      node.noValues ?? this.deps.noSide(id) ?? undefined,
      keepPicks,
    );
  }

  /** Plots gradients from now on; replots now if unrolled node `id` is the one shown. */
  showGradient(id: string): void {
    this.valueSwitch.set("grad", !this.node?.passes.includes(id));
  }

  private render(): void {
    const n = this.node!;
    const m = this.model!;
    this.activation.clear();
    this.body.replaceChildren();
    const func = h("span", "lens-insp-func", n.func);
    func.title = n.func;
    const head = inspectorHead(n.kind, func, () => this.deps.close());
    const idLine = h("div", "lens-insp-id", n.id);
    idLine.dataset.testid = "inspector-id";
    this.body.append(head, idLine);

    const g = this.deps.gradients();
    this.facts = this.opFacts(n, g);
    this.body.append(this.facts.el);

    this.body.append(
      this.links("inputs", m.parents.get(n.id) ?? []),
      this.links("outputs", m.children.get(n.id) ?? []),
    );
    this.body.append(this.call.el);
    this.codeEl = null;
    if (n.source) {
      const src = h("div", "lens-source");
      const where = h("div", "lens-muted lens-mono");
      where.append(...breakablePath(shortPath(n.source))); // wraps at a "/", never in a name or number
      where.title = n.source;
      src.append(where);
      // the recorded first line until the kernel sends the whole statement
      this.codeEl = h("pre", "lens-code", n.sourceCode);
      this.codeEl.dataset.testid = "source-code";
      src.append(this.codeEl);
      this.body.append(src);
    }

    const actHead = this.activation.section.head;
    actHead.querySelector("[data-testid=pass-picker]")?.remove();
    actHead.querySelector("[data-testid=module-output-picker]")?.remove(); // a module's, shown before
    if (n.passes.length > 1) actHead.append(passPicker(n.passes, this.pass, (i) => this.pickPass(n, i)));
    if (g) {
      this.valueSwitch.setPasses(g.completedPasses.map((p) => p.index));
      actHead.append(this.valueSwitch.el);
    } else this.valueSwitch.el.remove();
    this.body.append(this.ablate.el);
    if (n.attention) this.body.append(this.attention.el);
    this.body.append(this.activation.el);
  }

  /** The facts of the pass shown. */
  private opFacts(layer: NodeInfo, g: Gradients | null): OpFacts {
    const n = this.nodeFor(this.shownPass ?? layer.id);
    const fn = this.model && functionGroupOf(this.model, n);
    return new OpFacts(layer, n, this.pass, g, fn ? functionText(fn) : null);
  }

  /** The facts of the output plotted, for the pass shown. */
  private showOutputFacts(r: ActivationResult): void {
    if (!this.node || !this.facts) return;
    this.facts.showOutput(r, this.nodeFor(this.shownPass ?? this.node.id));
  }

  private pickPass(n: NodeInfo, i: number): void {
    this.pass = i;
    const facts = this.opFacts(n, this.deps.gradients());
    this.facts?.el.replaceWith(facts.el);
    this.facts = facts;
    this.loadPass(true);
  }

  /** The whole source statement (several lines) in place of its first line. */
  private showStatement(statement: string): void {
    if (this.codeEl) this.codeEl.textContent = statement;
  }

  private links(label: string, ids: string[], unrolled = false): HTMLElement {
    const m = this.model!;
    return unrolled
      ? nodeLinks(
          label,
          ids,
          (id) => this.deps.unrolledNode(id)?.func,
          (id) => this.deps.selectUnrolled(id),
        )
      : nodeLinks(
          label,
          ids,
          (id) => m.nodes.get(id)?.func,
          (id) => this.deps.select(id),
        );
  }

  /** Unrolled node `id`, or the node shown where it has none. */
  private nodeFor(id: string): NodeInfo {
    const u = this.model!.viewName === "unrolled" ? this.model!.nodes.get(id) : this.deps.unrolledNode(id);
    return u ?? this.node!;
  }

  /** Whether the op's tensor inputs (query, key, mask) are saved in the kernel. */
  private inputsSaved(id: string): boolean {
    return this.deps.unrolledParents(id).every((p) => this.deps.unrolledNode(p)?.saved ?? true);
  }

  dispose(): void {
    this.ro.disconnect();
    this.activation.dispose();
    this.attention.dispose();
  }
}
