import { describe, expect, it } from "vitest";
import { graphValues, rangeText } from "../../js/src/controls/overlayRange";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { LOG_DECADES, pickScaleMode } from "../../js/src/panel/colorScale";
import { itemValues, makeScale } from "../../js/src/render/overlay";
import { nested, nestedValues } from "./builders";

describe("pickScaleMode", () => {
  it("picks log when the magnitudes span more than two decades (a training step's grad norms)", () => {
    const got = pickScaleMode([0.0027, 0.04, 0.3, 2.19, NaN, Infinity]);
    expect(got.mode).toBe("log");
    expect(got.decades).toBeCloseTo(Math.log10(2.19 / 0.0027));
  });
  it("stays linear within two decades, and for one value", () => {
    expect(pickScaleMode([1, 50, 99]).mode).toBe("linear");
    expect(pickScaleMode([3, 3]).mode).toBe("linear");
    expect(pickScaleMode([3, 3]).decades).toBe(0);
    expect(pickScaleMode([]).mode).toBe("linear");
  });
  it("leaves zeros out of the span: no FLOPs is not a decade", () => {
    expect(pickScaleMode([0, 0, 5, 10]).mode).toBe("linear");
    expect(pickScaleMode([0, 1, 10 ** (LOG_DECADES + 0.1)]).mode).toBe("log");
  });
  it("keeps signed data linear: a log of magnitudes would fold -x onto x", () => {
    expect(pickScaleMode([-5, 0.001, 3]).mode).toBe("linear");
  });
});

describe("graphValues: a range that stays as modules open", () => {
  const values = nestedValues();

  it("holds every op and every module, so a shown item's value is always inside", () => {
    const m = buildModel(nested(), "unrolled");
    const all = graphValues(m, values, "sum");
    const scale = makeScale(all, "linear");
    for (const expanded of [[], ["a"], ["a", "b"], ["a", "b", "b.0", "b.1"]]) {
      const vis = computeVisible(m, { expanded: new Set(expanded), showParams: false });
      const shown = [...itemValues(m, vis, values, "sum").values()].filter((v) => !Number.isNaN(v));
      for (const v of shown) expect(v >= scale.min && v <= scale.max).toBe(true);
    }
    // the same whatever is open: 1 (act_1) to 14 (module b's sum)
    expect([scale.min, scale.max]).toEqual([1, 14]);
  });

  it("says which range the legend shows", () => {
    expect(rangeText("graph", 7)).toBe("range of the whole graph");
    expect(rangeText("shown", 7)).toBe("range of the 7 shown");
  });
});
