// The overlay's legend: the metric, its color ramp between the smallest and largest value
// shown, the scale, and what the marks mean; for the device coloring, each device's color and
// how many ops ran on it.

import { fmtCompact, fmtCount } from "../panel/format";
import { type DeviceShare, MIXED_COLOR, shareBar } from "./deviceOverlay";
import { h } from "./dom";
import { swatch } from "./legend";
import { type MetricInfo, rampGradient, type Scale } from "./overlay";

export const NO_VALUE_COLOR = "#dee2e6";
export const ZERO_COLOR = "#ffffff"; // an amount of none (0 params): not the ramp's bottom
export const ONLY_A_COLOR = "#f783ac";
export const NONFINITE_MARK = "#e03131";
export const GRAD_NONFINITE_MARK = "#ae3ec9"; // drawn in the top-left corner
export const NO_GRAD_STROKE = "#f76707"; // dashed outline of a leaf that got no gradient

export class OverlayLegend {
  readonly el = h("span", "lens-legend lens-overlay-legend");

  constructor() {
    this.el.dataset.testid = "overlay-legend";
    this.el.hidden = true;
  }

  /** `drawn`: the marks on the graph now. Without a metric only those are explained (the
   * legend was hidden, leaving red corners and dashed outlines unexplained). */
  show(
    metric: Pick<MetricInfo, "label" | "agg"> | null,
    scale: Scale | null,
    compare: boolean,
    grads = false,
    drawn: DrawnMarks = NO_MARKS,
    scaleNote = "", // how the scale was picked and what its range spans (overlayControl.ts)
    zeros = false, // some item shown has an amount of 0 (ZERO_COLOR)
  ): void {
    if (!metric || !scale) {
      const marks = [
        ...(drawn.nonfinite ? [nonfiniteMark()] : []),
        ...(drawn.maskedNonfinite ? [maskedMark()] : []),
        ...gradientMarks(drawn),
      ];
      this.el.hidden = !marks.length;
      return this.el.replaceChildren(...marks);
    }
    const ramp = h("i", "lens-ramp");
    ramp.style.background = rampGradient();
    ramp.style.width = "90px";
    const range = h("span", "");
    range.dataset.testid = "overlay-range";
    range.append(
      `${metric.label} (${metric.agg}) ${fmtCompact(scale.min)} `,
      ramp,
      ` ${fmtCompact(scale.max)} · ${scale.mode}${scaleNote ? ` (${scaleNote})` : ""}`,
    );
    this.el.hidden = false;
    const gradMarks = grads ? gradientMarks({ gradNonfinite: true, starved: true }) : [];
    this.el.replaceChildren(
      range,
      ...(zeros ? [zeroSwatch(metric.label)] : []),
      swatch(NO_VALUE_COLOR, "no value"),
      ...(compare ? [swatch(ONLY_A_COLOR, "only in A")] : []),
      nonfiniteMark(),
      ...(drawn.maskedNonfinite ? [maskedMark()] : []),
      ...gradMarks,
    );
  }

  /** The device coloring: each device (`devices`, of every op of the log) with its swatch and
   * op count, the mixed style when a shown module ran on several, ops that ran on none. */
  showDevices(devices: readonly DeviceShare[], mixed: boolean, ops: number, drawn: DrawnMarks = NO_MARKS): void {
    const entries = devices.map((d) => {
      const s = swatch(d.color, `${d.device} · ${fmtCount(d.count)} op${d.count === 1 ? "" : "s"}`);
      s.dataset.testid = "legend-device";
      s.dataset.device = d.device;
      return s;
    });
    const title = h("span", "", "device:");
    title.dataset.testid = "overlay-range";
    const out: HTMLElement[] = [title, ...entries];
    if (mixed) {
      const s = swatch(MIXED_COLOR, "mixed (bar: share of ops per device)");
      const bar = s.firstElementChild as HTMLElement;
      const parts = shareBar(devices, 0, 100).map(([x, w, c]) => `${c} ${x}% ${x + w}%`);
      bar.style.background = `linear-gradient(to top, transparent 35%, ${MIXED_COLOR} 35%), linear-gradient(to right, ${parts.join(", ")})`;
      s.dataset.testid = "legend-mixed";
      out.push(s);
    }
    const none = ops - devices.reduce((n, d) => n + d.count, 0);
    if (none > 0) {
      const s = swatch("transparent", `no device · ${none} op${none === 1 ? "" : "s"}`);
      (s.firstElementChild as HTMLElement).style.borderColor = "currentColor"; // drawn in its kind's color
      out.push(s);
    }
    if (drawn.nonfinite) out.push(nonfiniteMark());
    if (drawn.maskedNonfinite) out.push(maskedMark());
    out.push(...gradientMarks(drawn));
    this.el.hidden = false;
    this.el.replaceChildren(...out);
  }
}

/** The swatch of an amount of none: "0 params", outlined so white reads on white. */
function zeroSwatch(label: string): HTMLElement {
  const s = swatch(ZERO_COLOR, `0 ${label}`, "#adb5bd");
  s.dataset.testid = "legend-zero";
  return s;
}

/** Which marks the graph shows now. */
export interface DrawnMarks {
  nonfinite: boolean; // the red corner of a NaN/Inf output
  maskedNonfinite?: boolean; // the grey corner of a NaN/Inf masked away later
  gradNonfinite: boolean;
  starved: boolean; // the dashed outline of what got no gradient
}

const NO_MARKS: DrawnMarks = { nonfinite: false, gradNonfinite: false, starved: false };

function nonfiniteMark(): HTMLElement {
  const mark = h("span", "");
  mark.dataset.testid = "legend-nonfinite";
  const corner = h("i", "");
  corner.style.background = NONFINITE_MARK;
  corner.style.borderColor = NONFINITE_MARK;
  corner.style.clipPath = "polygon(0 0, 100% 0, 100% 100%)"; // the corner drawn on a node
  mark.append(corner, "NaN/Inf output");
  return mark;
}

/** The quieter corner: a NaN/Inf that is masked away later (T5's log(0)). */
function maskedMark(): HTMLElement {
  const mark = h("span", "");
  mark.dataset.testid = "legend-nonfinite-masked";
  const corner = h("i", "");
  corner.style.background = "currentColor";
  corner.style.borderColor = "currentColor";
  corner.style.opacity = "0.45";
  corner.style.clipPath = "polygon(0 0, 100% 0, 100% 100%)";
  mark.append(corner, "NaN/Inf masked later (never reaches the output)");
  mark.title = "this op made NaN/Inf, but later ops turn them back into finite values";
  return mark;
}

/** The legend entries of a log with gradients: the NaN/Inf-gradient corner, the no-gradient outline. */
function gradientMarks(which: Pick<DrawnMarks, "gradNonfinite" | "starved">): HTMLElement[] {
  const mark = h("span", "");
  mark.dataset.testid = "legend-grad-nonfinite";
  const corner = h("i", "");
  corner.style.background = GRAD_NONFINITE_MARK;
  corner.style.borderColor = GRAD_NONFINITE_MARK;
  corner.style.clipPath = "polygon(0 0, 100% 0, 0 100%)"; // the top-left corner drawn on a node
  mark.append(corner, "NaN/Inf gradient");
  const starved = h("span", "");
  starved.dataset.testid = "legend-no-grad";
  const outline = h("i", "");
  outline.style.background = "transparent";
  outline.style.border = `2px dashed ${NO_GRAD_STROKE}`;
  starved.append(outline, "got no gradient");
  return [...(which.gradNonfinite ? [mark] : []), ...(which.starved ? [starved] : [])];
}
