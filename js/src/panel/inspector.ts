// Side panel for the selected node: its facts, links to neighbours, and its activation
// fetched from the kernel on demand and plotted.
import type { Activation } from "../kernel/messages";
import { RequestError } from "../kernel/messages";
import type { ActivationRequest, NodeInfo } from "../model/protocol";
import type { GraphModel } from "../model/tree";
import { h } from "../render/dom";
import type { Theme } from "../render/theme";
import { fmtBytes, fmtNum, fmtShape, shortPath } from "./format";
import { ensurePlots, plotHistogram, plotMain, purge } from "./plots";

export type ActivationParams = ActivationRequest["params"];

export interface InspectorDeps {
  theme: () => Theme;
  select: (id: string) => void;
  close: () => void;
  fetchActivation: (p: ActivationParams, onSlow: () => void) => Promise<Activation>;
  rerun: (id: string) => Promise<void>;
  unrolledNode: (id: string) => NodeInfo | undefined;
}

type ActState = "idle" | "loading" | "slow" | "done" | "error" | "unsaved" | "unavailable";

export class Inspector {
  readonly el: HTMLElement;
  private body: HTMLElement;
  private model: GraphModel | null = null;
  private node: NodeInfo | null = null;
  private pass = 0; // index into node.passes
  private params: ActivationParams = { id: "" };
  private token = 0;
  state: ActState = "idle";
  private actBox!: HTMLElement;
  private statusEl!: HTMLElement;
  private mainPlot!: HTMLElement;
  private histPlot!: HTMLElement;
  private controls!: HTMLElement;
  private statsEl!: HTMLElement;
  private noteEl!: HTMLElement;

  constructor(private deps: InspectorDeps) {
    this.el = document.createElement("aside");
    this.el.className = "lens-inspector";
    this.el.dataset.testid = "inspector";
    this.body = document.createElement("div");
    this.body.className = "lens-inspector-body";
    this.el.appendChild(this.body);
    this.el.hidden = true;
  }

  get nodeId(): string | null {
    return this.node?.id ?? null;
  }

  show(model: GraphModel, id: string | null): void {
    const n = id ? model.nodes.get(id) : undefined;
    this.model = model;
    if (!n) {
      this.node = null;
      this.el.hidden = true;
      this.token++;
      this.clearPlots();
      return;
    }
    const same = this.node?.id === n.id;
    this.node = n;
    if (!same) this.pass = 0;
    this.pass = Math.min(this.pass, n.passes.length - 1);
    this.el.hidden = false;
    this.render();
    this.params = { id: n.passes[this.pass] ?? n.id };
    this.loadActivation();
  }

  private render(): void {
    const n = this.node!;
    const m = this.model!;
    this.clearPlots();
    this.body.replaceChildren();
    const head = h("div", "lens-insp-head");
    const title = h("div", "lens-insp-title");
    title.append(h("span", `lens-kind lens-kind-${n.kind}`, n.kind), h("span", "lens-insp-func", n.func));
    const close = h("button", "lens-icon-btn", "×");
    close.title = "Close";
    close.dataset.testid = "inspector-close";
    close.onclick = () => this.deps.close();
    head.append(title, close);
    const idLine = h("div", "lens-insp-id", n.id);
    idLine.dataset.testid = "inspector-id";
    this.body.append(head, idLine);

    const rows: [string, string | HTMLElement][] = [];
    const passText = n.nPasses > 1 ? ` — ${n.nPasses} passes` : "";
    rows.push(["module", (n.module || "(top level)") + passText]);
    rows.push(["shape", fmtShape(n.shape)]);
    rows.push(["dtype", n.dtype ?? "—"]);
    rows.push(["device", n.device ?? "—"]);
    rows.push(["size", fmtBytes(n.nbytes)]);
    if (n.params.length) {
      const ul = h("div", "lens-params");
      for (const [name, shape] of n.params) {
        const line = h("div", "");
        line.append(h("span", "lens-mono", name), h("span", "lens-muted", " " + fmtShape(shape)));
        ul.append(line);
      }
      rows.push(["params", ul]);
    }
    if (n.failed) rows.push(["failed", "this op raised during the forward pass"]);
    const table = h("table", "lens-facts");
    for (const [k, v] of rows) {
      const tr = h("tr", "");
      tr.append(h("th", "", k));
      const td = h("td", "");
      td.append(v);
      tr.append(td);
      table.append(tr);
    }
    this.body.append(table);

    this.body.append(this.links("inputs", m.parents.get(n.id) ?? []), this.links("outputs", m.children.get(n.id) ?? []));
    if (n.source) {
      const src = h("div", "lens-source");
      const where = h("div", "lens-muted lens-mono", shortPath(n.source));
      where.title = n.source;
      src.append(where);
      if (n.sourceCode) src.append(h("pre", "lens-code", n.sourceCode));
      this.body.append(src);
    }

    this.actBox = h("div", "lens-act");
    this.actBox.dataset.testid = "activation";
    const actHead = h("div", "lens-section-title", "activation");
    this.actBox.append(actHead);
    if (n.passes.length > 1) {
      const sel = document.createElement("select");
      sel.className = "lens-select";
      sel.dataset.testid = "pass-picker";
      n.passes.forEach((pid, i) => {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = `pass ${i + 1} — ${pid}`;
        sel.append(o);
      });
      sel.value = String(this.pass);
      sel.onchange = () => {
        this.pass = Number(sel.value);
        this.params = { id: n.passes[this.pass] };
        this.loadActivation();
      };
      actHead.append(sel);
    }
    this.statusEl = h("div", "lens-act-status");
    this.statusEl.dataset.testid = "activation-status";
    this.controls = h("div", "lens-act-controls");
    this.mainPlot = h("div", "lens-plot");
    this.mainPlot.dataset.testid = "plot-main";
    this.noteEl = h("div", "lens-note");
    this.histPlot = h("div", "lens-plot lens-hist");
    this.histPlot.dataset.testid = "plot-hist";
    this.statsEl = h("div", "lens-stats");
    this.actBox.append(this.statusEl, this.controls, this.mainPlot, this.noteEl, this.histPlot, this.statsEl);
    this.body.append(this.actBox);
  }

  private links(label: string, ids: string[]): HTMLElement {
    const box = h("div", "lens-links");
    box.append(h("span", "lens-links-label", `${label} (${ids.length})`));
    const m = this.model!;
    for (const id of ids.slice(0, 40)) {
      const a = h("button", "lens-link", m.nodes.get(id)?.func ?? id);
      a.title = id;
      a.dataset.id = id;
      a.onclick = () => this.deps.select(id);
      box.append(a);
    }
    if (ids.length > 40) box.append(h("span", "lens-muted", ` +${ids.length - 40} more`));
    return box;
  }

  private setState(s: ActState, text: string): void {
    this.state = s;
    this.statusEl.textContent = text;
    this.statusEl.className = `lens-act-status lens-act-${s}`;
    this.actBox.dataset.state = s;
  }

  private savedFor(id: string): boolean {
    const u = this.model!.viewName === "unrolled" ? this.model!.nodes.get(id) : this.deps.unrolledNode(id);
    return u?.saved ?? this.node!.saved;
  }

  private loadActivation(): void {
    const token = ++this.token;
    const id = this.params.id;
    this.controls.replaceChildren();
    if (!this.savedFor(id)) {
      this.clearPlots();
      this.setState("unsaved", "activation not saved");
      const btn = h("button", "lens-btn lens-btn-primary", "Re-run to capture");
      btn.dataset.testid = "rerun";
      btn.onclick = () => {
        btn.disabled = true;
        this.setState("loading", "re-running the model to capture it…");
        this.deps.rerun(id).then(
          () => {
            if (token === this.token) this.setState("loading", "re-run done, waiting for the new graph…");
          },
          (e: Error) => {
            if (token === this.token) {
              this.setState("error", `re-run failed: ${e.message}`);
              btn.disabled = false;
            }
          },
        );
      };
      this.controls.append(btn);
      return;
    }
    this.setState("loading", "loading activation…");
    // Plotly loads lazily: a click before it is ready waits here, in the loading state.
    Promise.all([
      this.deps.fetchActivation(this.params, () => {
        if (token === this.token && this.state === "loading") this.setState("slow", "waiting for kernel (busy?)…");
      }),
      ensurePlots(),
    ]).then(
      ([act]) => {
        if (token !== this.token) return;
        this.setState("done", "");
        this.showActivation(act);
      },
      (e: Error) => {
        if (token !== this.token) return;
        this.clearPlots();
        // no kernel to ask (or not in this saved page): say so, a retry would not help
        if (e instanceof RequestError && e.unavailable) return this.setState("unavailable", e.message);
        const msg = e instanceof RequestError && e.timedOut ? `${e.message} — is the kernel busy or gone?` : `error: ${e.message}`;
        this.setState("error", msg);
        const retry = h("button", "lens-btn", "Retry");
        retry.onclick = () => this.loadActivation();
        this.controls.append(retry);
      },
    );
  }

  private showActivation(act: Activation): void {
    const r = act.result;
    const th = this.deps.theme();
    this.controls.replaceChildren();
    const info = h("div", "lens-muted", `${fmtShape(r.shape)} ${r.dtype}`);
    this.controls.append(info);
    if (r.nOutputs > 1) {
      const sel = document.createElement("select");
      sel.className = "lens-select";
      for (let i = 0; i < r.nOutputs; i++) {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = `output ${i}`;
        sel.append(o);
      }
      sel.value = String(r.output);
      sel.onchange = () => {
        this.params = { id: this.params.id, output: Number(sel.value) };
        this.loadActivation();
      };
      this.controls.append(sel);
    }
    if (r.batch && r.batch.size > 1) {
      const wrap = h("label", "lens-slider");
      const val = h("span", "lens-mono", `batch ${r.batch.index}/${r.batch.size - 1}`);
      const input = document.createElement("input");
      input.type = "range";
      input.min = "0";
      input.max = String(r.batch.size - 1);
      input.value = String(r.batch.index);
      input.dataset.testid = "batch-slider";
      input.oninput = () => (val.textContent = `batch ${input.value}/${r.batch!.size - 1}`);
      input.onchange = () => {
        this.params = { ...this.params, batch: Number(input.value) };
        this.loadActivation();
      };
      wrap.append(val, input);
      this.controls.append(wrap);
    }
    if (r.channels && r.channels.total > r.channels.count) {
      const c = r.channels;
      const wrap = h("div", "lens-chan");
      const prev = h("button", "lens-btn", "◀");
      const next = h("button", "lens-btn", "▶");
      prev.dataset.testid = "channels-prev";
      next.dataset.testid = "channels-next";
      prev.disabled = c.start <= 0;
      next.disabled = c.start + c.count >= c.total;
      const go = (start: number): void => {
        this.params = { ...this.params, channelStart: Math.max(0, Math.min(c.total - 1, start)) };
        this.loadActivation();
      };
      prev.onclick = () => go(c.start - c.count);
      next.onclick = () => go(c.start + c.count);
      wrap.append(prev, h("span", "lens-mono", `channels ${c.start}–${c.start + c.count - 1} of ${c.total}`), next);
      this.controls.append(wrap);
    }
    if (r.plot === "scalar") {
      purge(this.mainPlot);
      this.mainPlot.replaceChildren(h("div", "lens-scalar", fmtNum(act.values[0] ?? NaN)));
    } else {
      // Plotly.react reuses its own DOM: only drop a scalar read-out left from before
      this.mainPlot.querySelector(".lens-scalar")?.remove();
      plotMain(this.mainPlot, act, th);
    }
    performance.mark("lens:plot-done", { detail: { id: r.id, plot: r.plot } });
    // A note without a reduction (e.g. "complex shown as magnitude") is still worth showing.
    this.noteEl.textContent = r.reduced ? `reduced: ${r.note}` : r.note;
    if (r.hist.counts.length > 0) plotHistogram(this.histPlot, act, th);
    else purge(this.histPlot);
    const s = r.stats;
    const cells: [string, string][] = [
      ["min", fmtNum(s.min)],
      ["max", fmtNum(s.max)],
      ["mean", fmtNum(s.mean)],
      ["std", fmtNum(s.std)],
      ["zeros", `${(s.zeros * 100).toFixed(1)}%`],
      ["NaN", String(s.nan)],
      ["Inf", String(s.inf)],
      ["numel", s.numel.toLocaleString("en-US")],
    ];
    const t = h("table", "lens-stats-table");
    t.dataset.testid = "stats";
    for (let i = 0; i < cells.length; i += 4) {
      const tr = h("tr", "");
      for (const [k, v] of cells.slice(i, i + 4)) {
        const td = h("td", "");
        const bad = (k === "NaN" || k === "Inf") && v !== "0";
        td.append(h("div", "lens-stat-k", k), h("div", bad ? "lens-stat-v lens-bad" : "lens-stat-v", v));
        tr.append(td);
      }
      t.append(tr);
    }
    this.statsEl.replaceChildren(t);
  }

  private clearPlots(): void {
    if (this.mainPlot) purge(this.mainPlot);
    if (this.histPlot) purge(this.histPlot);
  }

  dispose(): void {
    this.token++;
    this.clearPlots();
  }
}
