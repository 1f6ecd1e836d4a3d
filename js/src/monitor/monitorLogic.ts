// The monitor view's pure logic (no DOM): which step the slider shows and whether it follows
// the latest, the ranked list's rows, and an op's statistics over the steps as plot data
// (mean ± std band, exact min/max envelope, absmax, NaN/Inf marks).
import type { MonitorRankedOp, MonitorSeriesResult, MonitorSide } from "../graph/protocol";
import type { BufferLike } from "../kernel/messages";
import { decodeFloat32 } from "../kernel/messages";
import { fmtCompact } from "../panel/format";

// ---- the step slider ----

/** The `step` trait's value that means "show the latest step, and keep following it". */
export const FOLLOW = -1;

export interface SliderState {
  index: number; // into `steps`; -1 while there is no step
  step: number | null; // the step shown
  follow: boolean; // the slider moves to each new step as it arrives
}

/** What the slider shows for the traced `steps` and the `step` trait: the latest step when
 * following (or asked for a step not traced yet: the last one before it). */
export function sliderState(steps: readonly number[], trait: number): SliderState {
  if (!steps.length) return { index: -1, step: null, follow: trait === FOLLOW };
  if (trait === FOLLOW) return { index: steps.length - 1, step: steps[steps.length - 1], follow: true };
  let index = 0;
  for (let i = 0; i < steps.length; i++) if (steps[i] <= trait) index = i;
  return { index, step: steps[index], follow: false };
}

/** The `step` trait to write when the user moves the slider to `index`: the last step
 * follows again, any other stays where it was put. */
export function traitAfterSlide(steps: readonly number[], index: number): number {
  if (!steps.length || index >= steps.length - 1) return FOLLOW;
  return steps[Math.max(0, index)];
}

/** The `step` trait to write when the user turns following on or off at `shown`. */
export function traitAfterFollow(follow: boolean, shown: number | null): number {
  return follow || shown === null ? FOLLOW : shown;
}

// ---- the ranked list ----

export interface RankRow {
  id: string;
  text: string; // what the row says after the op: "NaN/Inf" or the change
  nonfinite: boolean;
  first: boolean; // the op that made the step's first NaN/Inf
}

/** A relative change as a percentage: 0.123 -> "+12.3%"; null (no value) -> "—". */
export function fmtChange(change: number | null): string {
  if (change === null || Number.isNaN(change)) return "—";
  if (!Number.isFinite(change)) return "new value";
  return `+${fmtCompact(change * 100)}%`;
}

/** The rows of the ranked list, as the kernel ranked them (non-finite first). */
export function rankRows(ranked: readonly MonitorRankedOp[], firstNonfinite: string | null): RankRow[] {
  return ranked.map((r) => ({
    id: r.id,
    text: r.nonfinite ? (r.id === firstNonfinite ? "NaN/Inf first made here" : "NaN/Inf") : fmtChange(r.change),
    nonfinite: r.nonfinite,
    first: r.id === firstNonfinite,
  }));
}

// ---- an op over the steps ----

export interface SideSeries {
  steps: number[];
  stats: Record<string, number[]>; // stat name -> one value per step (NaN: none)
}

/** The series of a "monitorSeries" reply: side -> its statistics per step. */
export function decodeSeries(
  result: MonitorSeriesResult,
  buffers: readonly BufferLike[],
): Map<MonitorSide, SideSeries> {
  const out = new Map<MonitorSide, SideSeries>();
  const n = result.steps.length;
  const k = result.stats.length;
  result.sides.forEach((side, i) => {
    const values = buffers[i] ? decodeFloat32(buffers[i]) : new Float32Array(0);
    if (values.length !== n * k) throw new Error(`monitorSeries: ${values.length} values for ${n} steps x ${k}`);
    const stats: Record<string, number[]> = {};
    result.stats.forEach((name, j) => {
      stats[name] = Array.from({ length: n }, (_, s) => values[s * k + j]);
    });
    out.set(side, { steps: result.steps, stats });
  });
  return out;
}

const gap = (v: number): number | null => (Number.isFinite(v) ? v : null); // plotly: a gap

export interface SeriesPlotData {
  x: number[];
  mean: (number | null)[];
  upper: (number | null)[]; // mean + std
  lower: (number | null)[]; // mean - std
  min: (number | null)[]; // exact, over the finite values
  max: (number | null)[];
  absmax: (number | null)[];
  marks: { x: number[]; y: number[]; text: string[] }; // steps with NaN/Inf, at the envelope's top
}

/** Plot data of one side: the band, the envelope, absmax and where NaN/Inf were. */
export function seriesPlotData(s: SideSeries): SeriesPlotData {
  const col = (name: string): number[] => s.stats[name] ?? s.steps.map(() => NaN);
  const [mean, std, min, max, absmax, nan, inf] = ["mean", "std", "min", "max", "absmax", "nan", "inf"].map(col);
  const marks = { x: [] as number[], y: [] as number[], text: [] as string[] };
  let top = 0;
  s.steps.forEach((step, i) => {
    if (Number.isFinite(max[i])) top = max[i];
    const bad = (nan[i] || 0) + (inf[i] || 0);
    if (bad > 0) {
      marks.x.push(step);
      marks.y.push(top);
      marks.text.push(`${nan[i] || 0} NaN, ${inf[i] || 0} Inf`);
    }
  });
  return {
    x: s.steps,
    mean: mean.map(gap),
    upper: mean.map((m, i) => gap(m + std[i])),
    lower: mean.map((m, i) => gap(m - std[i])),
    min: min.map(gap),
    max: max.map(gap),
    absmax: absmax.map(gap),
    marks,
  };
}

/** The mean ± std band as closed outlines, one per run of steps where both bounds are known
 * (plotly's fill between two traces with gaps joins across the gaps). */
export function bandOutlines(d: SeriesPlotData): { x: number[]; y: number[] }[] {
  const out: { x: number[]; y: number[] }[] = [];
  let run: number[] = [];
  const close = (): void => {
    if (run.length) {
      const back = [...run].reverse();
      out.push({
        x: [...run.map((i) => d.x[i]), ...back.map((i) => d.x[i])],
        y: [...run.map((i) => d.upper[i] as number), ...back.map((i) => d.lower[i] as number)],
      });
    }
    run = [];
  };
  d.x.forEach((_, i) => {
    if (d.upper[i] === null || d.lower[i] === null) close();
    else run.push(i);
  });
  close();
  return out;
}
