// Nothing vanishes: every output of the model stays an item of the view in every state
// (first view, Collapse all, rolled, chunked), grouped as before.
import { describe, expect, it } from "vitest";
import { defaultExpansion } from "../../js/src/graph/defaultExpansion";
import type { EdgeInfo, GraphPayload, NodeInfo } from "../../js/src/graph/protocol";
import { buildModel, type GraphModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { edge, gpt, node, payload } from "./builders";

const shown = (m: GraphModel, expanded: string[]): string[] =>
  computeVisible(m, { expanded: new Set(expanded), showParams: false }).items.map((i) => i.id);

/** `n` ops straight under the model (chunked past 200), two outputs at the end. */
function flat(n: number): GraphPayload {
  const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
  const edges: EdgeInfo[] = [];
  let prev = "input.0";
  for (let i = 0; i < n; i++) {
    nodes.push(node(`op_${i}`, []));
    edges.push(edge(prev, `op_${i}`));
    prev = `op_${i}`;
  }
  nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
  nodes.push(node("output.1", [], { kind: "output", func: "output.1" }));
  edges.push(edge(prev, "output.0"), edge("op_3", "output.1"));
  return payload(nodes, edges);
}

describe("outputs stay visible", () => {
  for (const view of ["unrolled", "rolled"] as const) {
    it(`after Collapse all, the cache group placed inside the model stays (${view})`, () => {
      const m = buildModel(gpt(), view);
      // the output group sits inside t, beside the blocks that made it
      expect(m.nodes.get("output.kv.0")!.groups[0]).toBe(view === "unrolled" ? "t:1" : "t");
      const collapsed = shown(m, []);
      expect(collapsed).toEqual(expect.arrayContaining(["output.logits", "@output.kv"]));
      expect(collapsed).toContain(view === "unrolled" ? "@t:1" : "@t");
      // open, it is where it was: inside t
      const open = computeVisible(m, { expanded: new Set(["t"]), showParams: false });
      expect(open.itemById.get("@output.kv")!.container).toBe(view === "unrolled" ? "t:1" : "t");
      // the output group opened while t is closed shows its outputs
      expect(shown(m, ["output.kv"])).toEqual(expect.arrayContaining(["output.kv.0", "output.kv.2"]));
    });
  }

  it("in a chunked graph, outputs in a closed chunk stay", () => {
    const m = buildModel(flat(450), "unrolled");
    const items = shown(m, defaultExpansion(m, false));
    expect(items.some((i) => i.includes("#"))).toBe(true); // chunks are there, closed
    expect(items).toEqual(expect.arrayContaining(["output.0", "output.1"]));
    const edges = computeVisible(m, { expanded: new Set(), showParams: false }).edges;
    // their edges come from the chunks that hold their producers
    expect(edges.filter((e) => e.target === "output.1").map((e) => e.source)).toHaveLength(1);
  });
});
