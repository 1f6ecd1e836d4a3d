import { describe, expect, it } from "vitest";
import { expansionLevels } from "../../js/src/graph/defaultExpansion";
import { allChains, outputKind, stackKey } from "../../js/src/graph/folds";
import { GraphViews } from "../../js/src/graph/graphViews";
import type { GraphPayload } from "../../js/src/graph/protocol";
import { buildModel } from "../../js/src/graph/tree";
import { allGroups, closedAround, computeVisible, groupIsOpen, toggledGroup } from "../../js/src/graph/visibility";
import { groupLines } from "../../js/src/layout/labels";
import { gpt, wide } from "./builders";

const items = (p: GraphPayload, view: "rolled" | "unrolled", expanded: string[]) =>
  computeVisible(buildModel(p, view), { expanded: new Set(expanded), showParams: false }).items.map((i) => i.id);

describe("stacks of repeated blocks (unrolled)", () => {
  const m = buildModel(gpt(), "unrolled");
  const key = stackKey(["t.h.0", "t.h.1", "t.h.2"]);

  it("puts the blocks in one group named after their class and count", () => {
    expect(key).toBe("t.h.0×3");
    const g = m.groups.get(key)!;
    expect(g.kind).toBe("stack");
    expect(g.members).toEqual(["t.h.0", "t.h.1", "t.h.2"]);
    expect(g.childGroups).toEqual(["t.h.0:1", "t.h.1:1", "t.h.2:1"]);
    expect(g.nOps).toBe(6);
    expect(m.nodes.get("b_1")!.groups).toEqual(["t:1", key, "t.h.1:1", "t.h.1.mlp:1"]);
    const [title, address] = groupLines(g, "unrolled");
    expect(title).toBe("Block ×3");
    expect(address).toBe("t.h.0…2");
  });

  it("shows the stack as one item until it is opened, then the blocks one by one", () => {
    const shut = items(gpt(), "unrolled", ["t"]);
    expect(shut.filter((i) => i.startsWith("@t.h"))).toEqual([`@${key}`]);
    const open = items(gpt(), "unrolled", ["t", key]);
    expect(open.filter((i) => i.startsWith("@t.h"))).toEqual(["@t.h.0:1", "@t.h.1:1", "@t.h.2:1"]);
    expect(items(gpt(), "unrolled", ["t", key, "t.h.1"])).toContain("a_1");
  });

  it("opens the stack for a node inside it", () => {
    expect(closedAround(m, "b_2", new Set(["t"]))).toEqual([key, "t.h.2", "t.h.2.mlp"]);
  });

  it("copies chains nested in a folded block into its other blocks", () => {
    const modules = new Set(["h.0", "h.1", "h.0.s.0", "h.0.s.1", "h.1.s.0", "h.1.s.1"]);
    expect(
      allChains(
        [
          ["h.0", "h.1"],
          ["h.0.s.0", "h.0.s.1"],
        ],
        modules,
      ),
    ).toEqual([
      ["h.0", "h.1"],
      ["h.0.s.0", "h.0.s.1"],
      ["h.1.s.0", "h.1.s.1"],
    ]);
  });
});

describe("folded blocks (rolled)", () => {
  const m = buildModel(gpt(), "rolled");

  it("labels the folded block and what is inside it with the number of blocks", () => {
    expect(m.groups.get("t.h.0")!.nPasses).toBe(3);
    expect(m.groups.get("t.h.0.mlp")!.nPasses).toBe(3);
    expect(m.groups.get("t")!.nPasses).toBe(1);
    expect(groupLines(m.groups.get("t.h.0")!, "rolled")[0]).toBe("Block ×3");
  });

  it("opens when any of its twins is open", () => {
    expect(m.groups.get("t.h.0.mlp")!.aliases).toEqual(["t.h.1.mlp", "t.h.2.mlp"]);
    expect(groupIsOpen(m, "t.h.0.mlp", new Set(["t.h.2.mlp"]))).toBe(true);
    expect(groupIsOpen(m, "t.h.0.mlp", new Set(["t.h.2"]))).toBe(false);
    expect(items(gpt(), "rolled", ["t", "t.h.1"])).toContain("a_0");
  });

  it("closes under every twin's address, opens under its own; all opens every module", () => {
    const open = new Set(["t", "t.h.2.mlp", "t.h.0.mlp"]);
    expect([...toggledGroup(m, "t.h.0.mlp", false, open)!]).toEqual(["t"]);
    expect([...toggledGroup(m, "t.h.0.mlp", true, new Set(["t"]))!]).toEqual(["t", "t.h.0.mlp"]);
    expect(toggledGroup(m, "nowhere", true, open)).toBeNull();
    const all = allGroups(m);
    expect(all.has("t") && all.has("t.h.0.mlp") && !all.has("")).toBe(true);
  });

  it("opens the unrolled stack on a switch from a rolled view with the block open", () => {
    const views = new GraphViews(gpt());
    expect(views.stacksToOpen(new Set(["t", "t.h.2"]))).toEqual(["t.h.0×3"]);
    expect(views.stacksToOpen(new Set(["t"]))).toEqual([]);
    expect(views.stacksToOpen(new Set(["t", "t.h.0", "t.h.0×3"]))).toEqual([]);
  });
});

describe("output groups", () => {
  it("names outputs by their first part", () => {
    expect(outputKind("output.past_key_values.layers.3.keys")).toBe("output.past_key_values");
    expect(outputKind("output.logits")).toBeNull();
    expect(outputKind("output.0")).toBeNull();
  });

  for (const view of ["unrolled", "rolled"] as const)
    it(`gathers outputs of one kind beside their producers, outside the blocks (${view})`, () => {
      const m = buildModel(gpt(4), view);
      const g = m.groups.get("output.kv")!;
      expect(g.kind).toBe("outputs");
      expect(g.members).toEqual(["output.kv.0", "output.kv.1", "output.kv.2", "output.kv.3"]);
      expect(groupLines(g, view)[0]).toBe("kv ×4");
      // inside t (which holds every producer), not inside a block or the stack
      expect(m.nodes.get("output.kv.2")!.groups).toEqual([view === "unrolled" ? "t:1" : "t", "output.kv"]);
      expect(m.nodes.get("output.logits")!.groups).toEqual([]);
      const shown = computeVisible(m, { expanded: new Set(["t"]), showParams: false }).items.map((i) => i.id);
      expect(shown.filter((i) => i.includes("kv"))).toEqual(["@output.kv"]);
    });
});

describe("expansionLevels", () => {
  it("never opens stacks or output groups, and starts at the first level with more than a handful", () => {
    const m = buildModel(gpt(), "unrolled");
    const { levels, lowest } = expansionLevels(m, false);
    expect(levels[0]).toEqual([]);
    expect(levels.at(-1)!.sort()).toEqual(["head", "t"]);
    for (const l of levels) expect(l.some((a) => a.includes("×") || a.startsWith("output."))).toBe(false);
    // nothing open already shows input, t, head and the outputs
    expect(lowest).toBe(0);
    // a lone wrapper (input, model, output) says nothing: the first view opens it at least
    const wrapped = expansionLevels(buildModel(wide(1, 4, 3), "unrolled"), false);
    expect(wrapped.levels[wrapped.lowest]).toEqual(["m0"]);
  });
});
