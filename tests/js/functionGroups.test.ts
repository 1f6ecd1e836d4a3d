// Function groups (a mask builder's ops, boxed like a module): closed on the first view,
// opened on click, found by search, present in the rolled view.
import { describe, expect, it } from "vitest";
import { defaultExpansion } from "../../js/src/graph/defaultExpansion";
import type { GraphPayload } from "../../js/src/graph/protocol";
import { search } from "../../js/src/graph/search";
import { buildModel } from "../../js/src/graph/tree";
import { closedAround, computeVisible } from "../../js/src/graph/visibility";
import { edge, node, payload } from "./builders";

const MASK = "t.create_causal_mask()";

/** input -> t: emb, [create_causal_mask(): arange, le, expand], attn(reads emb and the mask) -> out */
function masked(): GraphPayload {
  const nodes = [
    node("input.0", [], { kind: "input", func: "input.0" }),
    node("emb_1_1", ["t:1", "t.emb:1"]),
    node("arange_1_2", ["t:1", `${MASK}:1`], { fromInput: false }),
    node("le_1_3", ["t:1", `${MASK}:1`], { fromInput: false }),
    node("expand_1_4", ["t:1", `${MASK}:1`], { fromInput: false }),
    node("attn_1_5", ["t:1", "t.attn:1"]),
    node("output.logits", [], { kind: "output", func: "output.logits" }),
  ];
  const edges = [
    edge("input.0", "emb_1_1"),
    edge("arange_1_2", "le_1_3"),
    edge("le_1_3", "expand_1_4"),
    edge("emb_1_1", "attn_1_5"),
    edge("expand_1_4", "attn_1_5"),
    edge("attn_1_5", "output.logits"),
  ];
  const p = payload(nodes, edges, [
    { address: "t", className: "Model", parent: "", nPasses: 1, nOps: 5 },
    { address: "t.emb", className: "Embedding", parent: "t", nPasses: 1, nOps: 1 },
    { address: MASK, className: "create_causal_mask", parent: "t", nPasses: 1, nOps: 3, kind: "function" },
    { address: "t.attn", className: "Attention", parent: "t", nPasses: 1, nOps: 1 },
  ]);
  const rolled = nodes.map((n) => ({ ...n, groups: n.groups.map((g) => g.replace(/:\d+$/, "")) }));
  p.rolled = { nodes: rolled, edges };
  return p;
}

describe("function groups", () => {
  for (const view of ["unrolled", "rolled"] as const) {
    const key = view === "unrolled" ? `${MASK}:1` : MASK;
    it(`are boxes named after the function, inside the module that called it (${view})`, () => {
      const m = buildModel(masked(), view);
      const g = m.groups.get(key)!;
      expect(g.kind).toBe("function");
      expect(g.className).toBe("create_causal_mask()");
      expect(g.parent).toBe(view === "unrolled" ? "t:1" : "t");
      expect(g.nOps).toBe(3);
      expect(g.childNodes).toEqual(["arange_1_2", "le_1_3", "expand_1_4"]);
    });

    it(`stay closed on the first view while the modules around them open (${view})`, () => {
      const m = buildModel(masked(), view);
      const open = new Set(defaultExpansion(m, false));
      expect(open.has("t")).toBe(true);
      expect(open.has(MASK)).toBe(false);
      const shown = computeVisible(m, { expanded: open, showParams: false }).items.map((i) => i.id);
      expect(shown).toContain(`@${key}`);
      expect(shown).not.toContain("arange_1_2");
    });

    it(`open on click and are found by search (${view})`, () => {
      const m = buildModel(masked(), view);
      const shown = computeVisible(m, { expanded: new Set(["t", MASK]), showParams: false }).items.map((i) => i.id);
      expect(shown).toEqual(expect.arrayContaining(["arange_1_2", "le_1_3", "expand_1_4"]));
      expect(shown).not.toContain(`@${key}`);
      const hits = search(m, "create_causal");
      expect(hits[0]).toMatchObject({ kind: "group", id: key });
      // an op found inside the closed box opens it, as a module's would
      expect(search(m, "le_1_3")[0]).toMatchObject({ kind: "node", id: "le_1_3" });
      expect(closedAround(m, "le_1_3", new Set(["t"]))).toEqual([MASK]);
    });
  }
});
