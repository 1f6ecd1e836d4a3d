// Modules that return their input unchanged fold into the op before them until opened (#36 item 5).
import { describe, expect, it } from "vitest";
import { expansionLevels } from "../../js/src/graph/defaultExpansion";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible, foldedPassThrough } from "../../js/src/graph/visibility";
import { edge, node, payload } from "./builders";

function net() {
  const p = payload(
    [
      node("input.0", [], { kind: "input", func: "input.0" }),
      node("linear_1_1", ["t:1", "t.a:1"]),
      node("identity_1_2", ["t:1", "t.drop:1"]),
      node("linear_2_3", ["t:1", "t.b:1"]),
      node("output.0", [], { kind: "output", func: "output.0" }),
    ],
    [
      edge("input.0", "linear_1_1"),
      edge("linear_1_1", "identity_1_2"),
      edge("identity_1_2", "linear_2_3"),
      edge("linear_2_3", "output.0"),
    ],
  );
  p.modules = p.modules.map((m) => (m.address === "t.drop" ? { ...m, className: "Dropout", passThrough: true } : m));
  return buildModel(p, "unrolled");
}

describe("a module that returns its input", () => {
  it("is folded into the op before it, the edge running on past it", () => {
    const m = net();
    const vis = computeVisible(m, { expanded: new Set(["t"]), showParams: false });
    const ids = vis.items.map((i) => i.id);
    expect(ids).not.toContain("@t.drop:1");
    expect(ids).not.toContain("identity_1_2");
    expect(vis.edges.map((e) => [e.source, e.target])).toContainEqual(["@t.a:1", "@t.b:1"]);
    expect(foldedPassThrough(m, new Set(["t"]))).toEqual(["t.drop"]);
    expect(foldedPassThrough(m, new Set())).toEqual([]); // inside a closed box: nothing to say
  });

  it("shows once opened, and the first view does not open it", () => {
    const m = net();
    const vis = computeVisible(m, { expanded: new Set(["t", "t.drop"]), showParams: false });
    expect(vis.items.map((i) => i.id)).toContain("identity_1_2");
    expect(foldedPassThrough(m, new Set(["t", "t.drop"]))).toEqual([]);
    const { levels } = expansionLevels(m, false);
    expect(levels.flat()).not.toContain("t.drop");
  });
});
