// The "backward" side panel of a log with gradients: the autograd leaves (those that got no
// gradient first, highlighted) and, per backward pass, the autograd nodes that ran in
// execution order, each linked to the forward op that created it.
import type { Gradients } from "../graph/gradients";
import type { BackwardNodeInfo, LeafInfo } from "../graph/protocol";
import { h } from "../render/dom";
import { fmtCompact, fmtShape } from "./format";
import { LEAF_SORTS, type LeafSort, leafRank, sortLeaves } from "./leafOrder";
import { choicePicker } from "./pickers";

export interface GradientPanelDeps {
  selectLeaf(label: string): void; // select the leaf's node (a param or input source)
  inspectGradient(forwardOp: string): void; // select the forward op, plotting its gradient
}

// Rows listed before "+N more": the DOM stays small on a large model.
const MAX_ROWS = 1500;

export class GradientPanel {
  readonly el = h("aside", "lens-inspector lens-grad-panel");
  private body = h("div", "lens-inspector-body");
  private grads: Gradients | null = null;
  private pass = 1;
  private sort: LeafSort = "norm";

  constructor(private deps: GradientPanelDeps) {
    this.el.dataset.testid = "gradient-panel";
    this.el.hidden = true;
    this.el.append(this.body);
  }

  get open(): boolean {
    return !this.el.hidden;
  }

  setGradients(g: Gradients | null): void {
    this.grads = g;
    this.pass = g?.passes[0]?.index ?? 1;
    if (!g) this.el.hidden = true;
    else if (this.open) this.render();
  }

  toggle(open = !this.open): void {
    this.el.hidden = !open || !this.grads;
    if (!this.el.hidden) this.render();
  }

  private render(): void {
    const g = this.grads!;
    const head = h("div", "lens-insp-head");
    const close = h("button", "lens-icon-btn", "×");
    close.title = "Close";
    close.onclick = () => this.toggle(false);
    head.append(h("div", "lens-insp-title", "Backward"), close);
    this.body.replaceChildren(head, this.leaves(g), this.backward(g));
  }

  private leaves(g: Gradients): HTMLElement {
    const box = h("div", "lens-act");
    box.dataset.testid = "leaves";
    const starved = g.starvedCount;
    const title = `leaves (${g.leaves.length}${starved ? `, ${starved} got no gradient` : ""})`;
    const head = h("div", "lens-section-title");
    head.append(h("span", "", title), this.sortPicker());
    box.append(head);
    const leaves = sortLeaves(g.leaves, this.sort);
    // each norm as a bar on a log scale from the smallest to the largest: decades apart show
    const norms = leaves.map((l) => l.gradNorm).filter((n): n is number => n != null && n > 0);
    const lo = Math.log10(Math.min(...norms));
    const span = Math.log10(Math.max(...norms)) - lo;
    const bar = (n: number): number => (n > 0 ? (span > 0 ? (Math.log10(n) - lo) / span : 1) : 0);
    for (const leaf of leaves.slice(0, MAX_ROWS)) box.append(this.leafRow(leaf, bar));
    if (g.leaves.length > MAX_ROWS) box.append(h("div", "lens-muted", `+${g.leaves.length - MAX_ROWS} more`));
    return box;
  }

  private leafRow(leaf: LeafInfo, bar: (norm: number) => number): HTMLElement {
    const row = h("div", leaf.received ? "lens-leaf" : "lens-leaf lens-leaf-starved");
    row.dataset.testid = "leaf-row";
    row.dataset.name = leaf.name;
    // whole names, wrapped after a dot: cut at the end, q/k/v weights of one layer read alike
    const name = leaf.label ? h("button", "lens-link") : h("span", "lens-mono");
    name.append(...breakAfterDots(leaf.name));
    name.title = leaf.source ? `${leaf.name} (${leaf.source})` : leaf.name;
    if (leaf.label) name.onclick = () => this.deps.selectLeaf(leaf.label!);
    const passes = leaf.passes.length > 1 || this.grads!.passes.length > 1 ? ` (pass ${leaf.passes.join(", ")})` : "";
    const rank = leafRank(leaf);
    const text = [
      "no gradient",
      leaf.gradNorm === null ? "NaN/Inf gradient" : `gradient${passes}`, // undefined: saved before norms
      `gradient norm ${fmtCompact(leaf.gradNorm ?? NaN)}${passes}`,
    ][rank];
    const status = h("span", rank === 2 || leaf.gradNorm === undefined ? "lens-muted" : "lens-bad", text);
    status.dataset.testid = "leaf-status";
    row.append(name, h("span", "lens-muted", ` ${leaf.kind} ${fmtShape(leaf.shape)} `), status);
    if (rank === 2) {
      const norm = leaf.gradNorm!;
      row.dataset.norm = String(norm);
      const track = h("span", "lens-leaf-bar");
      const fill = h("i", "");
      fill.style.width = `${Math.round(4 + 96 * bar(norm))}%`;
      track.title = `gradient norm ${norm} (bars on a log scale)`;
      track.append(fill);
      row.append(track);
    }
    return row;
  }

  private sortPicker(): HTMLSelectElement {
    const sel = choicePicker(
      "leaf-sort",
      LEAF_SORTS,
      "Sort the leaves by gradient norm (largest first), name or model order; those that got no gradient (or a NaN/Inf one) stay first",
    );
    sel.value = this.sort;
    sel.onchange = () => {
      this.sort = sel.value as LeafSort;
      this.render();
    };
    return sel;
  }

  private backward(g: Gradients): HTMLElement {
    const box = h("div", "lens-act");
    box.dataset.testid = "backward-list";
    const head = h("div", "lens-section-title");
    head.append(h("span", "", "autograd nodes, in the order they ran"));
    if (g.passes.length > 1) head.append(this.passPicker(g));
    box.append(head);
    const p = g.passes.find((x) => x.index === this.pass);
    if (p?.error) {
      const err = h("div", "lens-act-status lens-act-error", `this pass raised: ${p.error}`);
      box.append(err);
    }
    const nodes = g.nodesOf(this.pass);
    const list = h("ol", "lens-bw-list");
    for (const n of nodes.slice(0, MAX_ROWS)) list.append(this.nodeRow(n));
    box.append(list);
    if (nodes.length > MAX_ROWS) box.append(h("div", "lens-muted", `+${nodes.length - MAX_ROWS} more`));
    if (!nodes.length && !p?.error) box.append(h("div", "lens-muted", "no autograd node recorded for this pass"));
    return box;
  }

  private nodeRow(n: BackwardNodeInfo): HTMLElement {
    const li = h("li", "lens-bw-node");
    li.dataset.testid = "backward-node";
    li.dataset.id = n.id;
    li.append(h("span", "lens-mono", n.gradFn));
    const op = n.forwardOp ?? n.withinOp;
    if (op) {
      // made by the op itself, or by its internals (F.linear's mm, t and view)
      const link = h("button", "lens-link", op);
      link.title = n.forwardOp
        ? `the forward op that created ${n.gradFn}: show its gradient`
        : `${n.gradFn} is part of this forward op's backward: show its gradient`;
      link.onclick = () => this.deps.inspectGradient(op);
      li.append(n.forwardOp ? " ← " : h("span", "lens-muted", " in "), link);
    } else if (n.leaf) {
      li.append(h("span", "lens-muted", ` → ${n.leaf}`));
    }
    if (n.gradShapes.length) li.append(h("span", "lens-muted", ` ${n.gradShapes.join(", ")}`));
    return li;
  }

  private passPicker(g: Gradients): HTMLSelectElement {
    const sel = document.createElement("select");
    sel.className = "lens-select";
    sel.dataset.testid = "backward-list-pass";
    for (const p of g.passes) {
      const o = document.createElement("option");
      o.value = String(p.index);
      o.textContent = `pass ${p.index}${p.error ? " (raised)" : ""}`;
      sel.append(o);
    }
    sel.value = String(this.pass);
    sel.onchange = () => {
      this.pass = Number(sel.value);
      this.render();
    };
    return sel;
  }
}

/** `name` as text with a line-break opportunity after each dot ("a.<wbr>b.<wbr>c"). */
function breakAfterDots(name: string): Node[] {
  return name
    .split(/(?<=\.)/)
    .flatMap((part, i) =>
      i ? [document.createElement("wbr"), document.createTextNode(part)] : [document.createTextNode(part)],
    );
}
