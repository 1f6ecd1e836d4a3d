// The overlay's legend: the metric, its color ramp between the smallest and largest value
// shown, the scale, and what the marks mean.
import { h } from "./dom";
import { fmtMetric, type MetricInfo, rampGradient, type Scale } from "./overlay";

export const NO_VALUE_COLOR = "#dee2e6";
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
    metric: MetricInfo | null,
    scale: Scale | null,
    compare: boolean,
    grads = false,
    drawn: DrawnMarks = NO_MARKS,
  ): void {
    if (!metric || !scale) {
      const marks = [...(drawn.nonfinite ? [nonfiniteMark()] : []), ...gradientMarks(drawn)];
      this.el.hidden = !marks.length;
      return this.el.replaceChildren(...marks);
    }
    const ramp = h("i", "lens-ramp");
    ramp.style.background = rampGradient();
    ramp.style.width = "90px";
    const swatch = (color: string, text: string): HTMLElement => {
      const s = h("span", "");
      const i = h("i", "");
      i.style.background = color;
      i.style.borderColor = color;
      s.append(i, text);
      return s;
    };
    const range = h("span", "");
    range.dataset.testid = "overlay-range";
    range.append(
      `${metric.label} (${metric.agg}) ${fmtMetric(scale.min)} `,
      ramp,
      ` ${fmtMetric(scale.max)} · ${scale.mode}`,
    );
    this.el.hidden = false;
    const gradMarks = grads ? gradientMarks({ gradNonfinite: true, starved: true }) : [];
    this.el.replaceChildren(
      range,
      swatch(NO_VALUE_COLOR, "no value"),
      ...(compare ? [swatch(ONLY_A_COLOR, "only in A")] : []),
      nonfiniteMark(),
      ...gradMarks,
    );
  }
}

/** Which marks the graph shows now. */
export interface DrawnMarks {
  nonfinite: boolean; // the red corner of a NaN/Inf output
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
