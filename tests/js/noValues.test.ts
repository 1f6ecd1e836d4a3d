import { describe, expect, it } from "vitest";
import { noValueColor } from "../../js/src/panel/colorScale";
import {
  countNonFinite,
  emptyMessage,
  lonePoints,
  nonFiniteMarks,
  nonFiniteMask,
  nonFiniteNote,
  nonFiniteText,
} from "../../js/src/panel/noValues";
import { DARK, LIGHT } from "../../js/src/render/theme";

const rgb = (hex: string): number[] => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
const apart = (a: string, b: string): number => Math.max(...rgb(a).map((v, i) => Math.abs(v - rgb(b)[i])));

describe("an empty tensor", () => {
  it("says its shape and that it has no values", () => {
    expect(emptyMessage([4, 0])).toBe("empty tensor: shape 4×0, no values");
    expect(emptyMessage([0])).toBe("empty tensor: shape 0, no values");
    expect(emptyMessage([2, 0, 3])).toBe("empty tensor: shape 2×0×3, no values");
  });
});

describe("NaN and Inf in plots", () => {
  const v = new Float32Array([0, NaN, 2, -Infinity, 1, Infinity]);

  it("counts NaN apart from ±Inf, as the stats table does", () => {
    expect(countNonFinite(v)).toEqual({ nan: 1, inf: 2 });
    expect(countNonFinite(new Float32Array([1, 0, -3]))).toEqual({ nan: 0, inf: 0 });
    expect([NaN, Infinity, -Infinity].map(nonFiniteText)).toEqual(["NaN", "+Inf", "-Inf"]);
  });

  it("masks exactly the non-finite cells of a block, at its offset", () => {
    const mask = nonFiniteMask(v, 2, 3);
    expect(mask?.z).toEqual([
      [null, 1, null],
      [1, null, 1],
    ]);
    expect(mask?.text).toEqual([
      ["", "NaN", ""],
      ["-Inf", "", "+Inf"],
    ]);
    // the second 1x2 channel of a (3, 1, 2) grid, and an all-finite one
    expect(nonFiniteMask(v, 1, 2, 2)?.z).toEqual([[null, 1]]);
    expect(nonFiniteMask(v, 1, 1, 4)).toBeNull();
  });

  it("writes the note under the plot, none when all is finite", () => {
    expect(nonFiniteNote({ nan: 12, inf: 3 }, "cell")).toBe("12 NaN, 3 Inf cells shown grey");
    expect(nonFiniteNote({ nan: 1, inf: 0 }, "cell")).toBe("1 NaN cell shown grey");
    expect(nonFiniteNote({ nan: 0, inf: 2 }, "point")).toBe("2 Inf points marked grey (× NaN, ▲▼ ±Inf)");
    expect(nonFiniteNote({ nan: 0, inf: 0 }, "cell")).toBe("");
  });

  it("marks a line's +Inf at the top, NaN and -Inf at the bottom, at their positions", () => {
    const m = nonFiniteMarks(v, [0, 10, 20, 30, 40, 50]);
    expect(m).toEqual({
      x: [10, 30, 50],
      y: [0.04, 0.04, 0.96],
      symbol: ["x", "triangle-down", "triangle-up"],
      text: ["NaN", "-Inf", "+Inf"],
    });
  });

  it("gives a marker to finite points with no finite neighbour, which a line cannot draw", () => {
    expect(lonePoints(new Float32Array([NaN, 1, NaN, 2, 3]), 5)).toEqual([0, 5, 0, 0, 0]);
    expect(lonePoints(new Float32Array([4, NaN]), 5)).toEqual([5, 0]);
    expect(lonePoints(new Float32Array([1, 2, NaN, 3, 4]), 5)).toBeNull();
  });

  it("greys them far from the colour of 0 (the diverging scale's middle) in both themes", () => {
    expect(apart(noValueColor(LIGHT), "#f7f7f7")).toBeGreaterThan(60);
    expect(apart(noValueColor(DARK), "#2f343b")).toBeGreaterThan(60);
    expect(apart(noValueColor(LIGHT), LIGHT.bg)).toBeGreaterThan(60);
    expect(apart(noValueColor(DARK), DARK.bg)).toBeGreaterThan(60);
  });
});
