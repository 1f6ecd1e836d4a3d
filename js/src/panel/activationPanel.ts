// The inspector's "activation" section: one output of the node fetched from the kernel and
// plotted, with pickers for the output, batch item and channel window, a histogram and stats.

import type { ActivationRequest, ValueKind } from "../graph/protocol";
import type { Activation, OnWaiting } from "../kernel/messages";
import { h } from "../render/dom";
import type { Theme } from "../render/theme";
import { noValueColor } from "./colorScale";
import { fmtCount, fmtNum, fmtPercent, fmtShape, gradientCaption } from "./format";
import { countNonFinite, emptyMessage, nonFiniteNote } from "./noValues";
import { indexSlider } from "./pickers";
import { plotHistogram, plotMain, purge } from "./plots";
import { Section } from "./section";

export type ActivationParams = ActivationRequest["params"];

/** Which value of the op is plotted: its output, or the gradient of one pass (or the sum). */
export interface ValueChoice {
  value: ValueKind;
  backwardPass?: number;
  reached: boolean; // a gradient reached the op (false: nothing to fetch)
  nPasses: number;
}

export interface ActivationDeps {
  theme: () => Theme;
  fetchActivation: (p: ActivationParams, onSlow: () => void) => Promise<Activation>;
  rerun: (id: string, onWaiting: OnWaiting) => Promise<void>;
  noRerun: () => string | null;
  shown?: (r: Activation["result"]) => void; // an answer was drawn
  sideLabel?: () => string | null; // in a comparison, the side plotted ("A", "B", "A − B")
}

export class ActivationPanel {
  readonly section: Section<Activation>;
  private params: ActivationParams = { id: "" };
  private saved = true;
  private noValues: string | null = null; // why the op has no values at all (meta device, torch.func transform)
  private choice: ValueChoice | null = null; // set when the gradient is plotted
  // a module's output plotted: the module inspector's picker chooses it, not the op's own
  private ofModule = false;
  private last: Activation | null = null;
  private mainPlot = h("div", "lens-plot");
  private noValuesEl = h("div", "lens-note lens-no-values"); // "3 NaN, 1 Inf cells shown grey"
  private noteEl = h("div", "lens-note");
  private histPlot = h("div", "lens-plot lens-hist");
  private statsEl = h("div", "lens-stats");

  constructor(private deps: ActivationDeps) {
    this.section = new Section<Activation>("activation", "activation", {
      fetch: (onSlow) => deps.fetchActivation(this.params, onSlow),
      show: (act) => this.show(act),
      clear: () => this.clear(),
      rerun: (onWaiting) => deps.rerun(this.params.id, onWaiting),
      noRerun: () => deps.noRerun(),
    });
    this.mainPlot.dataset.testid = "plot-main";
    this.noValuesEl.dataset.testid = "nonfinite-note";
    this.noteEl.dataset.testid = "activation-note";
    this.histPlot.dataset.testid = "plot-hist";
    this.section.el.append(this.mainPlot, this.noValuesEl, this.noteEl, this.histPlot, this.statsEl);
  }

  get el(): HTMLElement {
    return this.section.el;
  }

  /** Shows output 0 of unrolled node `id` (`saved`: the kernel has it), or its gradient;
   * `noValues` says why the op has no values to save (the meta device, a torch.func transform). */
  load(
    id: string,
    saved: boolean,
    choice?: ValueChoice,
    noValues?: string,
    keepPicks = false,
    output?: number, // which of the op's outputs (a module's output picked): 0 unless said
  ): void {
    this.ofModule = output !== undefined;
    this.noValues = noValues ?? null;
    this.choice = choice?.value === "grad" ? choice : null;
    // `keepPicks`: the same op on another side, pass or value: its output stays picked (a
    // gradient is of output 0 only), and on the same tensor shape its batch and channels
    const old = this.params;
    const kept =
      !keepPicks || this.choice
        ? {}
        : old.id === id
          ? { output: old.output, batch: old.batch, channelStart: old.channelStart }
          : { output: old.output };
    this.params = this.choice
      ? { id, value: "grad", ...(this.choice.backwardPass ? { backwardPass: this.choice.backwardPass } : {}) }
      : { ...kept, id, ...(output ? { output } : {}) };
    this.saved = saved;
    this.reload();
  }

  private reload(): void {
    this.last = null;
    // in a comparison the title says which run's value (or their difference) is plotted
    const side = this.choice ? null : (this.deps.sideLabel?.() ?? null);
    this.section.setTitle(this.choice ? "gradient" : side ? `activation (${side})` : "activation");
    this.el.dataset.value = this.choice ? "grad" : "activation";
    if (this.choice && !this.choice.reached) return this.section.unavailable("no gradient reached this op");
    if (!this.choice && this.noValues) return this.section.unavailable(this.noValues); // a re-run would not help
    this.section.load(this.saved || !!this.choice, this.choice ? "gradient" : "activation");
  }

  private pick(change: Partial<ActivationParams>): void {
    this.params = { ...this.params, ...change };
    this.reload();
  }

  /** Draws the last answer again (the theme changed). */
  redraw(): void {
    if (this.last) this.show(this.last);
  }

  private show(act: Activation): void {
    this.last = act;
    const r = act.result;
    const th = this.deps.theme();
    const controls = this.section.controls;
    controls.replaceChildren(h("div", "lens-muted", `${fmtShape(r.shape)} ${r.dtype}`));
    if (r.dims.length) {
      const dims = h("div", "lens-muted lens-dims", `(${r.dims.join(", ")})`);
      dims.dataset.testid = "activation-dims";
      controls.append(dims);
    }
    if (r.nOutputs > 1 && !this.ofModule) {
      const sel = document.createElement("select");
      sel.className = "lens-select";
      sel.dataset.testid = "output-picker";
      for (let i = 0; i < r.nOutputs; i++) {
        const o = document.createElement("option");
        o.value = String(i);
        o.textContent = `output ${i}`;
        sel.append(o);
      }
      sel.value = String(r.output);
      sel.onchange = () => this.pick({ output: Number(sel.value), batch: undefined, channelStart: undefined });
      controls.append(sel);
    }
    if (r.batch && r.batch.size > 1) {
      controls.append(
        indexSlider(r.dims[0] ?? "batch", r.batch.index, r.batch.size, "batch-slider", (i) => this.pick({ batch: i })),
      );
    }
    if (r.channels && r.channels.total > r.channels.count)
      controls.append(this.channelWindow(r.channels, r.axes[0] ?? "channel"));
    this.noValuesEl.replaceChildren();
    if (r.stats.numel === 0) {
      // Nothing to plot or describe: say so, rather than a blank chart and stats of nothing.
      this.clear();
      const msg = h("div", "lens-empty", emptyMessage(r.shape));
      msg.dataset.testid = "activation-empty";
      this.mainPlot.replaceChildren(msg);
    } else if (r.plot === "scalar") {
      purge(this.mainPlot);
      this.mainPlot.replaceChildren(h("div", "lens-scalar", fmtNum(act.values[0] ?? NaN)));
    } else {
      // Plotly.react reuses its own DOM: only drop a read-out left from before
      this.mainPlot.querySelector(".lens-scalar, .lens-empty")?.remove();
      plotMain(this.mainPlot, act, th);
      this.showNonFinite(act, th);
    }
    this.deps.shown?.(r);
    performance.mark("lens:plot-done", { detail: { id: r.id, plot: r.plot } });
    // A note without a reduction (e.g. "complex shown as magnitude") is still worth showing.
    const note = r.reduced ? `reduced: ${r.note}` : r.note;
    this.noteEl.textContent = this.choice ? [gradientCaption(this.choice), note].filter(Boolean).join(" · ") : note;
    if (r.hist.counts.length > 0) plotHistogram(this.histPlot, act, th);
    else purge(this.histPlot);
    this.statsEl.replaceChildren(...(r.stats.numel ? [statsTable(act)] : []));
  }

  /** Under the plot: how many plotted values are NaN or ±Inf, with the grey that shows them. */
  private showNonFinite(act: Activation, th: Theme): void {
    const text = nonFiniteNote(countNonFinite(act.values), act.result.plot === "line" ? "point" : "cell");
    if (!text) return;
    const swatch = h("i", "lens-swatch");
    swatch.style.background = noValueColor(th);
    this.noValuesEl.replaceChildren(swatch, text);
  }

  private channelWindow(c: { start: number; count: number; total: number }, name: string): HTMLElement {
    const wrap = h("div", "lens-chan");
    const prev = h("button", "lens-btn", "◀");
    const next = h("button", "lens-btn", "▶");
    prev.dataset.testid = "channels-prev";
    next.dataset.testid = "channels-next";
    prev.title = `previous ${name}s`;
    next.title = `next ${name}s`;
    prev.disabled = c.start <= 0;
    next.disabled = c.start + c.count >= c.total;
    const go = (start: number): void => this.pick({ channelStart: Math.max(0, Math.min(c.total - 1, start)) });
    prev.onclick = () => go(c.start - c.count);
    next.onclick = () => go(c.start + c.count);
    const caption = h("span", "lens-mono", `${name}s ${c.start}–${c.start + c.count - 1} of ${c.total}`);
    caption.dataset.testid = "channels-caption";
    wrap.append(prev, caption, next);
    return wrap;
  }

  /** Drops everything drawn for the op shown before: plots, notes and its statistics. */
  clear(): void {
    purge(this.mainPlot);
    purge(this.histPlot);
    this.noValuesEl.replaceChildren();
    this.noteEl.replaceChildren();
    this.statsEl.replaceChildren();
  }

  dispose(): void {
    this.section.cancel();
    this.clear();
  }
}

function statsTable(act: Activation): HTMLElement {
  const s = act.result.stats;
  const cells: [string, string][] = [
    ["min", fmtNum(s.min)],
    ["max", fmtNum(s.max)],
    ["mean", fmtNum(s.mean)],
    ["std", fmtNum(s.std)],
    ["zeros", s.zeros === null ? "—" : fmtPercent(s.zeros)],
    ["NaN", String(s.nan)],
    ["Inf", String(s.inf)],
    ["numel", fmtCount(s.numel)],
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
  return t;
}
