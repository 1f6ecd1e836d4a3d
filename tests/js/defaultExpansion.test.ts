import { describe, expect, it } from "vitest";
import { defaultExpansion } from "../../js/src/graph/defaultExpansion";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { nested, wide } from "./builders";

describe("defaultExpansion", () => {
  it("opens everything when the whole graph is small", () => {
    const m = buildModel(nested(), "unrolled");
    expect(defaultExpansion(m, false).sort()).toEqual(["a", "b", "b.0", "b.1"]);
  });

  it("stops at the deepest level that keeps the view under the limit", () => {
    // 10 blocks x 4 sub-modules x 10 ops: level 1 -> 42 items, level 2 -> 402
    const m = buildModel(wide(10, 4, 10), "unrolled");
    const exp = defaultExpansion(m, false, 150);
    expect(exp.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`).sort());
    const n = computeVisible(m, { expanded: new Set(exp), showParams: false }).items.length;
    expect(n).toBe(42);
  });

  it("opens a lone top-level wrapper even past the limit", () => {
    const m = buildModel(wide(1, 40, 10), "unrolled");
    const exp = defaultExpansion(m, false, 20);
    expect(exp).toEqual(["m0"]);
  });
});
