import { describe, expect, it } from "vitest";
import { GraphViews } from "../../js/src/graph/graphViews";
import type { GraphPayload } from "../../js/src/graph/protocol";
import { edge, node, payload } from "./builders";

/** A cell run twice: unrolled tanh_1_1:1 and tanh_1_1:2 fold into the rolled layer tanh_1_1. */
function loop(): GraphPayload {
  const input = node("input.0", [], { kind: "input", func: "input.0" });
  const output = node("output.0", [], { kind: "output", func: "output.0" });
  const unrolled = [input, node("tanh_1_1:1", ["cell:1"]), node("tanh_1_1:2", ["cell:2"]), output];
  const rolled = [input, node("tanh_1_1", ["cell"], { nPasses: 2, passes: ["tanh_1_1:1", "tanh_1_1:2"] }), output];
  const p = payload(unrolled, [
    edge("input.0", "tanh_1_1:1"),
    edge("tanh_1_1:1", "tanh_1_1:2"),
    edge("tanh_1_1:2", "output.0"),
  ]);
  return {
    ...p,
    rolled: { nodes: rolled, edges: [edge("input.0", "tanh_1_1", [1]), edge("tanh_1_1", "output.0", [2])] },
  };
}

describe("GraphViews", () => {
  it("builds each view once, on first use", () => {
    const v = new GraphViews(loop());
    expect(v.get("rolled")).toBe(v.get("rolled"));
    expect(v.get("rolled").viewName).toBe("rolled");
    expect(v.get("unrolled").nodes.has("tanh_1_1:2")).toBe(true);
  });

  it("maps a pass to its layer and a layer to its first pass", () => {
    const v = new GraphViews(loop());
    expect(v.counterpart("tanh_1_1:2", "unrolled", "rolled")).toBe("tanh_1_1");
    expect(v.counterpart("tanh_1_1", "rolled", "unrolled")).toBe("tanh_1_1:1");
    expect(v.counterpart("input.0", "unrolled", "rolled")).toBe("input.0");
  });

  it("keeps an id within one view and gives '' for nodes the other view lacks", () => {
    const v = new GraphViews(loop());
    expect(v.counterpart("tanh_1_1:2", "unrolled", "unrolled")).toBe("tanh_1_1:2");
    expect(v.counterpart("", "unrolled", "rolled")).toBe("");
    expect(v.counterpart("nope", "unrolled", "rolled")).toBe("");
    expect(v.counterpart("nope", "rolled", "unrolled")).toBe("");
  });
});
