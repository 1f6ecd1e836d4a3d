import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import {
  aggregate,
  itemValues,
  makeScale,
  metricInfo,
  rampColor,
  rampDomain,
  textOn,
  unrolledIdsOf,
  valueSlot,
} from "../../js/src/render/overlay";
import { edge, nested, nestedValues, node, payload } from "./builders";

describe("aggregate", () => {
  it("sums, takes max/min/mean, and shares, skipping NaN (no value)", () => {
    expect(aggregate("sum", [1, 2, NaN, 3])).toBe(6);
    expect(aggregate("max", [1, 5, NaN, 3])).toBe(5);
    expect(aggregate("min", [0.9, 0.2, NaN])).toBe(0.2);
    expect(aggregate("mean", [1, NaN, 3])).toBe(2);
    expect(aggregate("share", [1, 0, 0, 1, NaN])).toBe(0.5);
    expect(aggregate("sum", [NaN, NaN])).toBeNaN();
    expect(aggregate("max", [])).toBeNaN();
  });
});

describe("makeScale", () => {
  it("places values linearly between the extremes", () => {
    const s = makeScale([2, 4, 6, NaN], "linear");
    expect([s.min, s.max]).toEqual([2, 6]);
    expect(s.position(4)).toBe(0.5);
    expect(s.position(NaN)).toBeNull();
    expect(s.position(100)).toBe(1);
  });
  it("places magnitudes on a log scale, zero at the bottom", () => {
    const s = makeScale([1, 10, 100, 0], "log");
    expect([s.min, s.max]).toEqual([1, 100]);
    expect(s.position(10)).toBeCloseTo(0.5);
    expect(s.position(-100)).toBe(1);
    expect(s.position(0)).toBe(0);
  });
  it("puts one repeated value in the middle and Inf at the top", () => {
    const s = makeScale([3, 3], "linear");
    expect(s.position(3)).toBe(0.5);
    expect(s.position(Infinity)).toBe(1);
    expect(s.position(-Infinity)).toBe(0);
  });
  it("puts values that are all zero at the bottom: a comparison without difference", () => {
    const s = makeScale([0, 0, NaN], "linear");
    expect([s.min, s.max]).toEqual([0, 0]);
    expect(s.position(0)).toBe(0);
  });
});

describe("colors and numbers", () => {
  it("runs the ramp from dark to light", () => {
    expect(rampColor(0)).toBe("rgb(68,1,84)");
    expect(rampColor(1)).toBe("rgb(253,231,37)");
    expect(rampColor(0.5)).not.toBe(rampColor(0.49));
  });
});

describe("an amount of none", () => {
  it("0 params is drawn as none, not as the smallest amount, and the ramp spans the others", () => {
    const params = metricInfo("params");
    const values = [0, 10, 1000, NaN];
    for (const mode of ["linear", "log"] as const) {
      const scale = makeScale(rampDomain(params, values), mode);
      expect([scale.min, scale.max]).toEqual([10, 1000]);
      expect(valueSlot(params, scale, 0)).toBe("zero");
      expect(valueSlot(params, scale, 10)).toBe(0);
      expect(valueSlot(params, scale, 1000)).toBe(1);
      expect(valueSlot(params, scale, NaN)).toBe("none");
    }
    for (const name of ["flops", "bytes", "commBytes"] as const) expect(metricInfo(name).zeroIsNone).toBe(true);
  });

  it("a difference of 0 is a value, the ramp's bottom (no difference)", () => {
    const relL2 = metricInfo("relL2");
    const scale = makeScale(rampDomain(relL2, [0, 0.5]), "linear");
    expect(valueSlot(relL2, scale, 0)).toBe(0);
  });
});

describe("itemValues", () => {
  const values = nestedValues();

  it("gives a collapsed module the aggregate of every op inside, nested ones included", () => {
    const m = buildModel(nested(), "unrolled");
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    const sums = itemValues(m, vis, values, "sum");
    expect(sums.get("@a:1")).toBe(11);
    expect(sums.get("@b:1")).toBe(14);
    expect(sums.has("input.0")).toBe(false); // sources and sinks have no metric
    expect(itemValues(m, vis, values, "max").get("@b:1")).toBe(8);
    expect(unrolledIdsOf(m, "@b:1").sort()).toEqual(["x_1", "x_2", "y_1", "y_2"]);
  });

  it("gives an op node its own value once its module is open", () => {
    const m = buildModel(nested(), "unrolled");
    const vis = computeVisible(m, { expanded: new Set(["a", "b", "b.0", "b.1"]), showParams: false });
    const got = itemValues(m, vis, values, "sum");
    expect(got.get("lin_1")).toBe(10);
    expect(got.get("y_1")).toBeNaN();
  });

  it("aggregates a rolled layer over its passes", () => {
    const input = node("input.0", [], { kind: "input", func: "input.0" });
    const unrolled = [input, node("tanh_1_1:1", []), node("tanh_1_1:2", [])];
    const rolled = [input, node("tanh_1_1", [], { nPasses: 2, passes: ["tanh_1_1:1", "tanh_1_1:2"] })];
    const p = payload(unrolled, [edge("input.0", "tanh_1_1:1"), edge("tanh_1_1:1", "tanh_1_1:2")]);
    const m = buildModel({ ...p, rolled: { nodes: rolled, edges: [edge("input.0", "tanh_1_1", [1])] } }, "rolled");
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    const passValues = new Map([
      ["tanh_1_1:1", 3],
      ["tanh_1_1:2", 5],
    ]);
    expect(itemValues(m, vis, passValues, "sum").get("tanh_1_1")).toBe(8);
    expect(itemValues(m, vis, passValues, "max").get("tanh_1_1")).toBe(5);
    expect(itemValues(m, vis, passValues, "share").get("tanh_1_1")).toBe(1);
  });
});

describe("textOn", () => {
  it("puts white text on dark fills and dark text on light ones", () => {
    expect(textOn(rampColor(0))).toBe("#ffffff");
    expect(textOn(rampColor(1))).toBe("#1f2933");
  });
});
