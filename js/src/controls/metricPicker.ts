// The overlay bar: the metric picker, the linear/log switch, the "first NaN/Inf" button, the
// side of a comparison the inspector plots, and the overlay's legend.
import type { CompareSide } from "../graph/protocol";
import { choicePicker } from "../panel/pickers";
import { h } from "../render/dom";
import { DEVICE_OVERLAY, type OverlayName, offeredMetrics, type ScaleMode } from "../render/overlay";
import { OverlayLegend } from "../render/overlayLegend";
import type { RangeOf } from "./overlayRange";

export interface MetricPickerActions {
  setMetric(metric: OverlayName | null): void;
  setScale(mode: ScaleMode): void;
  firstNonfinite(): void;
  setSide(side: CompareSide): void;
  setRange(range: RangeOf): void;
}

export class MetricPicker {
  readonly el = h("div", "lens-toolbar lens-overlay-bar");
  readonly legend = new OverlayLegend();
  private select = document.createElement("select");
  private log = document.createElement("input");
  private range = choicePicker<RangeOf>(
    "metric-range",
    [
      ["graph", "range: whole graph"],
      ["shown", "range: shown"],
    ],
    "What the colour range spans: every op and module of the graph (it stays as modules open), or only the items shown",
  );
  private sideBox = h("label", "lens-check");
  private side = choicePicker<CompareSide>("compare-side", [
    ["a", "A"],
    ["b", "B"],
    ["diff", "A − B"],
  ]);
  private note = h("span", "lens-status");

  constructor(actions: MetricPickerActions) {
    this.el.dataset.testid = "overlay-bar";
    this.select.className = "lens-select";
    this.select.dataset.testid = "metric-picker";
    this.select.title =
      "Color every op (and each collapsed module, by an aggregate) by a metric, or by the device it ran on";
    this.fillOptions(false, false, false, false);
    this.select.onchange = () => actions.setMetric((this.select.value || null) as OverlayName | null);
    this.log.type = "checkbox";
    this.log.dataset.testid = "metric-log";
    this.log.onchange = () => actions.setScale(this.log.checked ? "log" : "linear");
    const logLabel = h("label", "lens-check");
    logLabel.title = "Log scale (of magnitudes); set from the data until changed here";
    logLabel.append(this.log, "log");
    this.range.onchange = () => actions.setRange(this.range.value as RangeOf);
    const nan = h("button", "lens-btn", "first NaN/Inf");
    nan.dataset.testid = "first-nonfinite";
    nan.title = "Select the op that produced the first NaN or Inf (its inputs were all finite)";
    nan.onclick = () => actions.firstNonfinite();
    this.side.onchange = () => actions.setSide(this.side.value as CompareSide);
    this.sideBox.append("inspector shows ", this.side);
    this.sideBox.hidden = true;
    this.note.dataset.testid = "overlay-note";
    this.el.append(
      h("span", "", "color by"),
      this.select,
      logLabel,
      this.range,
      h("span", "lens-sep"),
      nan,
      this.sideBox,
      this.note,
      this.legend.el,
    );
  }

  /** Offers the difference metrics only in a comparison, the gradient ones only with
   * gradients, "device" when some op ran on a known device. */
  setOffers(compare: boolean, grads: boolean, devices: boolean, comm = false): void {
    this.fillOptions(compare, grads, devices, comm);
    this.sideBox.hidden = !compare;
    if (!compare) this.side.value = "a";
  }

  showMetric(metric: OverlayName | null): void {
    this.select.value = metric ?? "";
    this.log.disabled = metric === DEVICE_OVERLAY; // categories have no scale
    this.range.disabled = metric === DEVICE_OVERLAY;
  }

  /** The scale in use: the log box follows the data's choice (`auto`) until the user sets it. */
  showScale(mode: ScaleMode, auto: boolean): void {
    this.log.checked = mode === "log";
    this.log.dataset.auto = String(auto);
  }

  showNote(text: string): void {
    this.note.textContent = text;
  }

  private fillOptions(compare: boolean, grads: boolean, devices: boolean, comm: boolean): void {
    const keep = this.select.value;
    const none = document.createElement("option");
    none.value = "";
    none.textContent = "kind (default)";
    const offered: [string, string][] = offeredMetrics(compare, grads, comm).map((m) => [m.name, m.label]);
    if (devices) offered.unshift([DEVICE_OVERLAY, "device"]);
    const options = offered.map(([name, label]) => {
      const o = document.createElement("option");
      o.value = name;
      o.textContent = label;
      return o;
    });
    this.select.replaceChildren(none, ...options);
    this.select.value = options.some((o) => o.value === keep) ? keep : "";
  }
}
