import { describe, expect, it } from "vitest";
import type { LeafInfo } from "../../js/src/graph/protocol";
import { leafRank, sortLeaves } from "../../js/src/panel/leafOrder";

function leaf(name: string, gradNorm: number | null, received = true): LeafInfo {
  return {
    name,
    kind: "param",
    shape: [2],
    dtype: "float32",
    label: name,
    source: "",
    received,
    passes: received ? [1] : [],
    gradNorm,
  };
}

// in model order, as the kernel sends them
const leaves = [
  leaf("a.weight", 0.0027),
  leaf("b.weight", 2.19),
  leaf("aux.weight", null, false),
  leaf("c.weight", null), // a NaN/Inf gradient
  leaf("d.bias", 0.04),
];

describe("sortLeaves", () => {
  it("sorts by gradient norm, largest first, after those without gradient and the NaN/Inf ones", () => {
    expect(sortLeaves(leaves, "norm").map((l) => l.name)).toEqual([
      "aux.weight",
      "c.weight",
      "b.weight",
      "d.bias",
      "a.weight",
    ]);
  });
  it("sorts by name or keeps the model's order, the same ones first", () => {
    const byName = sortLeaves([...leaves].reverse(), "name").map((l) => l.name);
    expect(byName).toEqual(["aux.weight", "c.weight", "a.weight", "b.weight", "d.bias"]);
    expect(sortLeaves(leaves, "model").map((l) => l.name)).toEqual([
      "aux.weight",
      "c.weight",
      "a.weight",
      "b.weight",
      "d.bias",
    ]);
  });
  it("ranks what the panel marks", () => {
    expect(leaves.map(leafRank)).toEqual([2, 2, 0, 1, 2]);
    // a notebook saved before norms were sent: received, no norm, not a NaN/Inf mark of its own
    const old = { ...leaf("e", 1) } as Partial<LeafInfo>;
    delete old.gradNorm;
    expect(leafRank(old as LeafInfo)).toBe(1);
  });
});
