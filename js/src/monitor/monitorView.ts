// The monitor view (a widget of LensWidget.from_monitor; hidden for any other): the bar
// (side, statistic, value or change, the step slider, follow latest), the ranked list of the
// ops that changed most or went non-finite at the step shown, and the selected op's
// statistics over the steps, with its value at the step when that step was kept whole.
// It reads the `monitor` and `step` traits, writes `step`, and colors the graph through the
// overlay (OverlayControl.showExternal): one step's column travels per slider move.

import type { ExternalValues } from "../controls/overlayControl";
import type { MonitorInfo, MonitorMode, MonitorSide, MonitorStat, MonitorStepResult } from "../graph/protocol";
import type { BufferLike, RequestClient } from "../kernel/messages";
import { decodeFloat32 } from "../kernel/messages";
import type { WidgetModel } from "../kernel/widgetModel";
import { choicePicker } from "../panel/pickers";
import { loadPlotly } from "../panel/plotlyLoader";
import { plotMain } from "../panel/plots";
import { h } from "../render/dom";
import type { Aggregate } from "../render/overlay";
import type { Theme } from "../render/theme";
import {
  decodeSeries,
  rankRows,
  type SideSeries,
  sliderState,
  traitAfterFollow,
  traitAfterSlide,
} from "./monitorLogic";
import { plotSeries } from "./seriesPlot";

export interface MonitorDeps {
  requests(): RequestClient;
  showValues(ext: ExternalValues | null): void; // color the graph (null: the picker's metric)
  selectUnrolled(id: string): void;
  theme(): Theme;
}

const STATS: [MonitorStat, string, Aggregate][] = [
  ["mean", "mean", "mean"],
  ["std", "std", "mean"],
  ["min", "min", "min"],
  ["max", "max", "max"],
  ["absmax", "absmax", "max"],
  ["zero_fraction", "zero fraction", "mean"],
  ["nan", "NaN count", "sum"],
  ["inf", "Inf count", "sum"],
  ["numel", "numel", "sum"],
];
const RANK_STAT: MonitorStat = "absmax"; // ranks the changes while no statistic colors the graph

export class MonitorView {
  readonly el = h("div", "lens-monitor");
  readonly bar = h("div", "lens-toolbar lens-monitor-bar"); // placed under the overlay bar
  private side = choicePicker<MonitorSide>(
    "monitor-side",
    [
      ["activation", "activation"],
      ["gradient", "gradient"],
    ],
    "Which value's statistics",
  );
  private stat = choicePicker<MonitorStat | "">(
    "monitor-stat",
    [["", "off (kind)"], ...STATS.map(([s, t]): [MonitorStat, string] => [s, t])],
    "Color every op by this statistic at the step shown",
  );
  private mode = choicePicker<MonitorMode>(
    "monitor-mode",
    [
      ["value", "value"],
      ["change", "change since first step"],
    ],
    "The statistic, or its relative change since the first traced step",
  );
  private slider = h("input", "lens-monitor-slider");
  private stepLabel = h("span", "lens-monitor-step");
  private follow = h("input", "");
  private note = h("span", "lens-status");
  private list = h("ol", "lens-monitor-ranked");
  private seriesTitle = h("div", "lens-monitor-title");
  private seriesDiv = h("div", "lens-monitor-series");
  private keptDiv = h("div", "lens-monitor-kept");
  private info: MonitorInfo | null = null;
  private ids = new Map<number, string[]>(); // opsKey -> the op ids of its steps
  private token = 0;
  private inFlight = false; // a monitorStep request is out
  private pending = false; // ... and another was wished meanwhile
  private asked = ""; // "step|side|stat|mode" of the request out or shown: not asked twice
  private seriesToken = 0;
  private opId = "";
  private series: Map<MonitorSide, SideSeries> | null = null;
  private seriesBusy = false; // a monitorSeries request is out
  private keptSteps: number[] = []; // of the op plotted, the steps kept whole
  private keptShown = ""; // "op@step" whose kept value is plotted
  private cleanups: (() => void)[] = [];

  constructor(
    private model: WidgetModel,
    private deps: MonitorDeps,
  ) {
    this.el.dataset.testid = "monitor";
    this.bar.dataset.testid = "monitor-bar";
    this.slider.type = "range";
    this.slider.min = "0";
    this.slider.dataset.testid = "monitor-slider";
    this.slider.title = "The traced step shown";
    this.stepLabel.dataset.testid = "monitor-step";
    this.follow.type = "checkbox";
    this.follow.dataset.testid = "monitor-follow";
    const followLabel = h("label", "lens-check");
    followLabel.title = "Move to each new step as training goes on";
    followLabel.append(this.follow, "follow latest");
    this.note.dataset.testid = "monitor-note";
    this.list.dataset.testid = "monitor-ranked";
    this.seriesDiv.dataset.testid = "monitor-series";
    this.keptDiv.dataset.testid = "monitor-kept";
    this.bar.append(
      h("span", "", "monitor"),
      this.side,
      this.stat,
      this.mode,
      h("span", "lens-sep"),
      h("span", "", "step"),
      this.slider,
      this.stepLabel,
      followLabel,
      this.note,
    );
    const rankedBox = h("div", "lens-monitor-list");
    rankedBox.append(h("div", "lens-monitor-title", "changed most / non-finite at this step"), this.list);
    const seriesBox = h("div", "lens-monitor-plots");
    seriesBox.append(this.seriesTitle, this.seriesDiv, this.keptDiv);
    const body = h("div", "lens-monitor-body");
    body.append(rankedBox, seriesBox);
    this.el.append(body);
    this.seriesTitle.textContent = "click an op (graph or list) to plot its statistics over the steps";

    this.side.onchange = this.stat.onchange = this.mode.onchange = () => this.fetchStep();
    this.slider.oninput = () => this.writeStep(traitAfterSlide(this.steps, Number(this.slider.value)));
    this.follow.onchange = () => this.writeStep(traitAfterFollow(this.follow.checked, this.shown.step));
    this.el.hidden = this.bar.hidden = true;
  }

  /** Shows the widget's monitor and follows its changes (once requests can be made). */
  start(): void {
    this.listen("monitor", () => this.setInfo(this.model.get("monitor")));
    this.listen("step", () => this.showStep());
    this.setInfo(this.model.get("monitor"));
  }

  private listen(trait: "monitor" | "step", fn: () => void): void {
    this.model.on(`change:${trait}`, fn);
    this.cleanups.push(() => this.model.off(`change:${trait}`, fn));
  }

  private get steps(): number[] {
    return this.info?.steps ?? [];
  }

  private get shown(): ReturnType<typeof sliderState> {
    return sliderState(this.steps, this.model.get("step") ?? -1);
  }

  /** The `monitor` trait changed: a new step arrived (or the widget has no monitor). */
  private setInfo(info: MonitorInfo | null): void {
    this.info = info;
    this.el.hidden = this.bar.hidden = !info;
    if (!info) return;
    this.side.disabled = !info.grads;
    this.slider.max = String(Math.max(0, info.steps.length - 1));
    this.slider.disabled = info.steps.length < 2;
    this.showStep();
    if (this.opId && !this.seriesBusy) this.showSeries(this.opId); // its series grew
  }

  private writeStep(step: number): void {
    this.model.set("step", step);
    this.model.save_changes();
    this.showStep();
  }

  /** Shows the step of the `step` trait: slider, label, then its column and ranked list. */
  private showStep(): void {
    const s = this.shown;
    this.slider.value = String(Math.max(0, s.index));
    this.follow.checked = s.follow;
    this.stepLabel.textContent = s.step === null ? "no step yet" : `${s.step} of ${this.steps[this.steps.length - 1]}`;
    this.el.dataset.step = s.step === null ? "" : String(s.step);
    this.fetchStep();
    this.redrawSeries();
  }

  /** Asks for the step shown; while a request is out, only the newest wish is asked next
   * (a fast training loop sends steps faster than a busy kernel answers). */
  private fetchStep(): void {
    const step = this.shown.step;
    if (step === null || !this.info) return;
    const picked = this.stat.value as MonitorStat | "";
    const side = this.side.value as MonitorSide;
    const mode = this.mode.value as MonitorMode;
    const key = `${step}|${side}|${picked}|${mode}`;
    if (key === this.asked) {
      this.pending = false; // back to what is out, or shown already: nothing more to ask
      return;
    }
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    this.pending = false;
    this.asked = key;
    const token = ++this.token;
    const known = [...this.ids.keys()];
    const params = {
      step,
      side,
      stat: picked || RANK_STAT,
      mode: picked ? mode : "change",
      top: 20,
      ...(known.length ? { idsOf: known[known.length - 1] } : {}),
    } as const;
    this.inFlight = true;
    this.deps
      .requests()
      .request({ method: "monitorStep", params }, { timeoutMs: 60000 })
      .then(({ result, buffers }) => {
        if (token === this.token && !this.pending) this.showColumn(result as MonitorStepResult, buffers[0], !!picked);
      })
      .catch((e: Error) => {
        if (token === this.token) this.asked = ""; // a failed step is asked again next time
        if (token === this.token && !this.pending) this.note.textContent = `monitor: ${e.message}`;
      })
      .finally(() => {
        this.inFlight = false;
        if (this.pending && token === this.token) this.fetchStep();
      });
  }

  private showColumn(r: MonitorStepResult, buffer: BufferLike | undefined, color: boolean): void {
    if (r.ids) this.ids.set(r.opsKey, r.ids);
    const ids = this.ids.get(r.opsKey) ?? [];
    const values = buffer ? decodeFloat32(buffer) : new Float32Array(0);
    this.note.textContent = values.length === ids.length ? "" : "monitor: values and ops differ";
    this.el.dataset.shown = `${r.step}|${r.side}|${color ? r.stat : ""}|${r.mode}`;
    if (color) {
      const agg: Aggregate = r.mode === "change" ? "max" : (STATS.find(([s]) => s === r.stat)?.[2] ?? "mean");
      const label = `${r.side} ${r.stat}${r.mode === "change" ? " change" : ""} @ ${r.step}`;
      this.deps.showValues({ info: { label, agg }, values: new Map(ids.map((id, i) => [id, values[i]])) });
    } else this.deps.showValues(null);
    const rows = rankRows(r.ranked, r.firstNonfinite?.id ?? null);
    this.list.replaceChildren(
      ...rows.map((row) => {
        const li = h("li", row.nonfinite ? "lens-monitor-bad" : "");
        li.dataset.id = row.id;
        const b = h("button", "lens-linkish", row.id);
        b.onclick = () => this.pick(row.id);
        li.append(b, h("span", "lens-muted", ` ${row.text}`));
        return li;
      }),
    );
    if (!rows.length) this.list.append(h("li", "lens-muted", "no op to rank"));
  }

  /** A row of the list: select the op in the graph (it plots there) and plot it here. */
  private pick(id: string): void {
    this.deps.selectUnrolled(id);
    if (id !== this.opId) this.showSeries(id);
  }

  /** The user picked a metric of the overlay bar: the graph is no longer colored from here. */
  metricPicked(): void {
    if (!this.stat.value) return;
    this.stat.value = "";
    this.fetchStep();
  }

  /** The op selected in the graph (unrolled id; "" for none). */
  select(id: string): void {
    if (!this.info || !id || id === this.opId) return;
    this.showSeries(id);
  }

  private showSeries(id: string): void {
    this.opId = id;
    const token = ++this.seriesToken;
    this.seriesTitle.textContent = `${id} over the steps`;
    this.seriesBusy = true;
    this.deps
      .requests()
      .request({ method: "monitorSeries", params: { id } }, { timeoutMs: 60000 })
      .then(({ result, buffers }) => {
        if (token !== this.seriesToken) return;
        const r = result as Parameters<typeof decodeSeries>[0];
        this.series = decodeSeries(r, buffers);
        this.keptSteps = r.kept;
        this.redrawSeries();
      })
      .catch((e: Error) => {
        if (token !== this.seriesToken) return;
        this.series = null;
        this.seriesTitle.textContent = `${id}: ${e.message}`;
      })
      .finally(() => {
        if (token === this.seriesToken) this.seriesBusy = false;
      });
  }

  private redrawSeries(): void {
    if (!this.series) return;
    const step = this.shown.step;
    void plotSeries(this.seriesDiv, this.series, step, this.deps.theme()).catch(() => undefined);
    const kept = step !== null && this.keptSteps.includes(step);
    const key = kept ? `${this.opId}@${step}` : "";
    if (key === this.keptShown) return;
    this.keptShown = key;
    this.keptDiv.replaceChildren();
    if (!kept || step === null) return;
    const id = this.opId;
    this.keptDiv.append(h("div", "lens-monitor-title", `${id} at step ${step} (kept whole)`));
    const plot = h("div", "");
    plot.dataset.testid = "monitor-kept-plot";
    this.keptDiv.append(plot);
    Promise.all([this.deps.requests().activation({ id, step }, () => undefined), loadPlotly()])
      .then(([act]) => {
        if (this.keptShown === key) plotMain(plot, act, this.deps.theme());
      })
      .catch((e: Error) => plot.append(h("span", "lens-muted", e.message)));
  }

  dispose(): void {
    this.cleanups.forEach((f) => f());
    this.cleanups = [];
    this.pending = false;
    this.asked = "";
    this.token++;
    this.seriesToken++;
  }
}
