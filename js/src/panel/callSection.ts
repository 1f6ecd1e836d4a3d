// The inspector's "call" section: every argument of the op by the role it plays in the call
// (query, key, value, attn_mask; input, weight, bias), non-tensor values printed and tensors
// as links to the node that produced them; the op's FLOPs, time and parameters; and the
// whole source statement, wrapped. Asked of the kernel ("opDetails") when an op is shown.
import type { CallArgument, OpDetailsResult } from "../graph/protocol";
import { h } from "../render/dom";
import { fmtCount, fmtMs } from "./format";

export interface CallDeps {
  fetchOpDetails: (id: string) => Promise<OpDetailsResult>;
  select: (id: string) => void;
  label: (id: string) => string; // how the graph names a producer ("transpose", "input.0")
}

/** "147,456 FLOPs · 0.12 ms · 4,224 params" of what the kernel knows. */
export function callNumbers(d: Pick<OpDetailsResult, "flops" | "timeMs" | "paramCount">): string {
  const parts: string[] = [];
  if (d.flops !== null) parts.push(`${fmtCount(d.flops)} FLOPs`);
  if (d.timeMs !== null) parts.push(fmtMs(d.timeMs));
  if (d.paramCount > 0) parts.push(`${fmtCount(d.paramCount)} params`);
  return parts.join(" · ");
}

/** What became of the op's NaN/Inf, in words; "" when its outputs are finite. */
export function reachText(reach: OpDetailsResult["nonfinite"]): string {
  if (reach === "masked")
    return "NaN/Inf here are masked away later: later ops turn them into finite values, and they never reach the model's output or a gradient";
  if (reach === "reaches") return "NaN/Inf here reach the model's output (or a gradient)";
  return "";
}

/** `name = value` of a non-tensor argument, as one line of text (what a test reads). */
export function argumentText(a: CallArgument): string {
  return a.producer === null ? `${a.name} = ${a.value ?? ""}` : `${a.name} ← ${a.producer}`;
}

export class CallSection {
  readonly el = h("div", "lens-call");
  private token = 0;

  constructor(private deps: CallDeps) {
    this.el.dataset.testid = "call";
  }

  /** Asks for op `id`'s call; `fallback` (the recorded first line) shows until it comes. */
  load(id: string, onStatement: (statement: string) => void): void {
    const token = ++this.token;
    this.el.replaceChildren(h("div", "lens-muted", "call…"));
    this.el.dataset.state = "loading";
    this.deps
      .fetchOpDetails(id)
      .then((d) => {
        if (token !== this.token) return;
        this.show(d);
        if (d.statement) onStatement(d.statement);
      })
      .catch((e: Error) => {
        if (token !== this.token) return;
        // no kernel (a saved page), or an old kernel: the node's own facts stay
        this.el.replaceChildren();
        this.el.dataset.state = "error";
        this.el.title = e.message;
      });
  }

  clear(): void {
    this.token++;
    this.el.replaceChildren();
  }

  private show(d: OpDetailsResult): void {
    this.el.dataset.state = "done";
    const nodes: HTMLElement[] = [h("div", "lens-section-title", "call")];
    if (d.function) {
      const fn = h("div", "lens-mono lens-call-fn", d.function);
      fn.dataset.testid = "call-function";
      nodes.push(fn);
    }
    const numbers = callNumbers(d);
    if (numbers) {
      const el = h("div", "lens-muted lens-call-numbers", numbers);
      el.dataset.testid = "call-numbers";
      nodes.push(el);
    }
    const reach = reachText(d.nonfinite);
    if (reach) {
      const note = h("div", `lens-note lens-nonfinite-${d.nonfinite}`, reach);
      note.dataset.testid = "nonfinite-reach";
      nodes.push(note);
    }
    const passed = d.arguments.filter((a) => !a.default);
    const defaults = d.arguments.filter((a) => a.default);
    nodes.push(this.table(passed, "call-args"));
    if (defaults.length) {
      const more = h("details", "lens-call-defaults");
      more.append(
        h("summary", "lens-muted", `${defaults.length} left at their default`),
        this.table(defaults, "call-defaults"),
      );
      nodes.push(more);
    }
    this.el.replaceChildren(...nodes);
  }

  private table(args: CallArgument[], testid: string): HTMLElement {
    const table = h("table", "lens-facts lens-call-args");
    table.dataset.testid = testid;
    for (const a of args) {
      const tr = h("tr", "");
      tr.dataset.name = a.name;
      tr.dataset.testid = "call-arg";
      const td = h("td", "lens-mono");
      if (a.producer === null) td.append(h("span", "lens-call-value", a.value ?? ""));
      else td.append(this.link(a));
      const th = h("th", "lens-mono", a.name);
      th.title = a.name; // cut with an ellipsis where long (scale_grad_by_freq)
      tr.append(th, td);
      table.append(tr);
    }
    return table;
  }

  private link(a: CallArgument): HTMLElement {
    const id = a.producer ?? "";
    const name = this.deps.label(id);
    const out = a.output > 0 ? `[${a.output}]` : "";
    const btn = h("button", "lens-link", `${name}${out}`);
    btn.title = id;
    btn.dataset.id = id;
    btn.onclick = () => this.deps.select(id);
    const wrap = h("span", "");
    wrap.append(btn);
    if (a.shape) wrap.append(h("span", "lens-muted", ` ${a.shape}`));
    return wrap;
  }
}
