import { describe, expect, it } from "vitest";
import type { MonitorSeriesResult } from "../../js/src/graph/protocol";
import {
  bandOutlines,
  decodeSeries,
  FOLLOW,
  fmtChange,
  rankRows,
  seriesPlotData,
  sliderState,
  traitAfterFollow,
  traitAfterSlide,
} from "../../js/src/monitor/monitorLogic";

describe("the step slider follows the latest step unless moved", () => {
  const steps = [0, 5, 10];

  it("follows: the latest step, and the next one when it arrives", () => {
    expect(sliderState(steps, FOLLOW)).toEqual({ index: 2, step: 10, follow: true });
    expect(sliderState([...steps, 15], FOLLOW)).toEqual({ index: 3, step: 15, follow: true });
  });

  it("moved: stays on its step when new steps arrive", () => {
    expect(sliderState(steps, 5)).toEqual({ index: 1, step: 5, follow: false });
    expect(sliderState([...steps, 15, 20], 5)).toEqual({ index: 1, step: 5, follow: false });
  });

  it("a step not traced (yet) shows the last one before it", () => {
    expect(sliderState(steps, 7)).toEqual({ index: 1, step: 5, follow: false });
    expect(sliderState(steps, 99)).toEqual({ index: 2, step: 10, follow: false });
  });

  it("no step yet: nothing shown", () => {
    expect(sliderState([], FOLLOW)).toEqual({ index: -1, step: null, follow: true });
    expect(sliderState([], 3).step).toBeNull();
  });

  it("sliding to the end follows again; elsewhere pins the step", () => {
    expect(traitAfterSlide(steps, 2)).toBe(FOLLOW);
    expect(traitAfterSlide(steps, 0)).toBe(0);
    expect(traitAfterSlide(steps, 1)).toBe(5);
    expect(traitAfterSlide([], 0)).toBe(FOLLOW);
  });

  it("the follow box: on follows, off pins the step shown", () => {
    expect(traitAfterFollow(true, 5)).toBe(FOLLOW);
    expect(traitAfterFollow(false, 10)).toBe(10);
    expect(traitAfterFollow(false, null)).toBe(FOLLOW);
  });
});

describe("the ranked list", () => {
  it("says NaN/Inf for non-finite ops, marks the first, and the change of the others", () => {
    const rows = rankRows(
      [
        { id: "log_1_4", change: null, nonfinite: true },
        { id: "mul_1_5", change: 2, nonfinite: true },
        { id: "linear_1_1", change: 0.1234, nonfinite: false },
        { id: "relu_1_2", change: null, nonfinite: false },
      ],
      "log_1_4",
    );
    expect(rows.map((r) => [r.id, r.text, r.first, r.nonfinite])).toEqual([
      ["log_1_4", "NaN/Inf first made here", true, true],
      ["mul_1_5", "NaN/Inf", false, true],
      ["linear_1_1", "+12.3%", false, false],
      ["relu_1_2", "—", false, false],
    ]);
  });

  it("formats changes as percentages", () => {
    expect(fmtChange(0)).toBe("+0%");
    expect(fmtChange(1)).toBe("+100%");
    expect(fmtChange(25)).toBe("+2.5k%");
    expect(fmtChange(Infinity)).toBe("new value");
    expect(fmtChange(NaN)).toBe("—");
  });
});

describe("an op over the steps", () => {
  const stats = ["mean", "std", "min", "max", "absmax", "zero_fraction", "nan", "inf", "numel"];
  const rows = [
    [1, 0.5, -1, 3, 3, 0, 0, 0, 8],
    [2, 1, -2, 5, 5, 0, 0, 0, 8],
    [NaN, NaN, NaN, NaN, NaN, NaN, 6, 2, 8], // all NaN/Inf at step 2
  ];
  const result: MonitorSeriesResult = { id: "x", steps: [0, 1, 2], stats, sides: ["activation"], kept: [2] };
  const buffer = new Float32Array(rows.flat()).buffer;

  it("decodes the rows of each side", () => {
    const series = decodeSeries(result, [buffer]).get("activation")!;
    expect(series.steps).toEqual([0, 1, 2]);
    expect(series.stats.mean.slice(0, 2)).toEqual([1, 2]);
    expect(series.stats.nan).toEqual([0, 0, 6]);
  });

  it("a buffer of the wrong size is an error", () => {
    expect(() => decodeSeries(result, [new Float32Array(5).buffer])).toThrow(/5 values for 3 steps/);
  });

  it("band is mean ± std, the envelope exact, gaps where there is no value, marks at NaN/Inf", () => {
    const d = seriesPlotData(decodeSeries(result, [buffer]).get("activation")!);
    expect(d.upper).toEqual([1.5, 3, null]);
    expect(d.lower).toEqual([0.5, 1, null]);
    expect(d.min).toEqual([-1, -2, null]);
    expect(d.max).toEqual([3, 5, null]);
    expect(d.absmax).toEqual([3, 5, null]);
    // the mark sits at the last finite top of the envelope, and says what it counted
    expect(d.marks).toEqual({ x: [2], y: [5], text: ["6 NaN, 2 Inf"] });
  });

  it("the band is one closed outline per run of known steps", () => {
    const d = seriesPlotData(decodeSeries(result, [buffer]).get("activation")!);
    expect(bandOutlines(d)).toEqual([{ x: [0, 1, 1, 0], y: [1.5, 3, 1, 0.5] }]);
    const gappy = { ...d, x: [0, 1, 2, 3], upper: [1, null, 3, 4], lower: [0, null, 2, 2] };
    expect(bandOutlines(gappy)).toEqual([
      { x: [0, 0], y: [1, 0] },
      { x: [2, 3, 3, 2], y: [3, 4, 2, 2] },
    ]);
  });
});
