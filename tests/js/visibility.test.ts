import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { nested } from "./builders";

const m = buildModel(nested(), "unrolled");
const vis = (expanded: string[], showParams = false) => computeVisible(m, { expanded: new Set(expanded), showParams });

describe("computeVisible", () => {
  it("shows collapsed modules as single items", () => {
    const v = vis([]);
    expect(v.items.map((i) => i.id)).toEqual(["input.0", "@a:1", "@b:1", "output.0"]);
    expect(v.boxes).toEqual([""]);
    expect(v.rep.get("y_2")).toBe("@b:1");
  });

  it("lifts edges to visible representatives and drops internal ones", () => {
    const v = vis([]);
    const pairs = v.edges.map((e) => `${e.source}>${e.target}`);
    expect(pairs).toEqual(["input.0>@a:1", "@a:1>@b:1", "@b:1>output.0"]);
    // act_1 -> x_1 and act_1 -> y_1 collapse into one lifted edge
    expect(v.edges[1].count).toBe(2);
  });

  it("expanding a module shows its children and nests boxes", () => {
    const v = vis(["b"]);
    expect(v.items.map((i) => i.id)).toEqual(["input.0", "@a:1", "@b.0:1", "@b.1:1", "output.0"]);
    expect(v.boxes).toEqual(["", "b:1"]);
    expect(v.boxChildren.get("")).toEqual(["input.0", "@a:1", "@b:1", "output.0"]);
    expect(v.boxChildren.get("b:1")).toEqual(["@b.0:1", "@b.1:1"]);
    expect(v.itemById.get("@b.1:1")!.container).toBe("b:1");
  });

  it("places each layout edge in the lowest common box", () => {
    const v = vis(["b", "b.0", "b.1"]);
    const e = v.edges.find((x) => x.source === "y_1" && x.target === "x_2")!;
    expect(e.lca).toBe("b:1");
    expect(e.direct).toBe(false);
    expect(v.layoutEdges.get("b:1")).toContainEqual(["@b.0:1", "@b.1:1"]);
    expect(v.layoutEdges.get("b.0:1")).toEqual([["x_1", "y_1"]]);
    const inner = v.edges.find((x) => x.source === "x_1")!;
    expect(inner.direct).toBe(true);
    // an edge entering b from the root is laid out at the root between a and b
    expect(v.layoutEdges.get("")).toContainEqual(["@a:1", "@b:1"]);
  });

  it("hides parameters unless asked", () => {
    expect(vis(["a"]).items.map((i) => i.id)).not.toContain("a.w");
    const withParams = vis(["a"], true);
    expect(withParams.items.map((i) => i.id)).toContain("a.w");
    expect(withParams.edges.map((e) => `${e.source}>${e.target}`)).toContain("a.w>lin_1");
  });

  it("ignores the expansion of modules inside a collapsed one", () => {
    const v = vis(["b.0"]);
    expect(v.items.map((i) => i.id)).toEqual(["input.0", "@a:1", "@b:1", "output.0"]);
  });
});
