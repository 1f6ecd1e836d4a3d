// A rolled node whose passes differ in shape shows each shape, and its group claims none.
import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { nodeLines } from "../../js/src/layout/labels";
import { edge, node, payload } from "./builders";

describe("rolled passes of different shapes", () => {
  const varying = node("relu_1_2", ["m"], {
    nPasses: 3,
    shape: [2, 4],
    passShapes: [
      [2, 4],
      [2, 5],
      [2, 6],
    ],
  });

  it("label every shape its passes had", () => {
    expect(nodeLines(varying)).toEqual(["relu ×3", "2×4 | 2×5 | 2×6"]);
    expect(nodeLines(node("relu_1_2", ["m"], { nPasses: 3, shape: [2, 4] }))).toEqual(["relu ×3", "2×4"]);
  });

  it("leave the group they close without a shape", () => {
    const p = payload(
      [node("input.0", [], { kind: "input", func: "input.0" }), varying],
      [edge("input.0", "relu_1_2")],
    );
    p.rolled = { nodes: p.unrolled.nodes, edges: p.unrolled.edges };
    expect(buildModel(p, "rolled").groups.get("m")!.outShape).toBeNull();
  });
});
