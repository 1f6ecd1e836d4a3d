import { describe, expect, it } from "vitest";
import { ancestorAddresses, buildModel, groupAncestorAddresses, parseGroupKey, ROOT } from "../../js/src/graph/tree";
import { nested } from "./builders";

describe("buildModel", () => {
  const m = buildModel(nested(), "unrolled");

  it("builds the group tree from NodeInfo.groups", () => {
    expect(m.groups.get(ROOT)!.childGroups).toEqual(["a:1", "b:1"]);
    expect(m.groups.get("b:1")!.childGroups).toEqual(["b.0:1", "b.1:1"]);
    expect(m.groups.get("b.1:1")!.parent).toBe("b:1");
    expect(m.groups.get("b.1:1")!.depth).toBe(2);
    expect(m.groups.get("b.1:1")!.address).toBe("b.1");
    expect(m.groups.get("b.1:1")!.pass).toBe(1);
    expect(m.groups.get("a:1")!.childNodes).toEqual(["a.w", "lin_1", "act_1"]);
    expect(m.groups.get(ROOT)!.childNodes).toEqual(["input.0", "output.0"]);
  });

  it("counts ops per subtree, sources excluded", () => {
    expect(m.groups.get("a:1")!.nOps).toBe(2);
    expect(m.groups.get("b:1")!.nOps).toBe(4);
    expect(m.groups.get(ROOT)!.nOps).toBe(6);
  });

  it("takes a group's output shape from the last value leaving it", () => {
    expect(m.groups.get("a:1")!.outShape).toEqual([1, 8]);
    expect(m.groups.get("b:1")!.outShape).toEqual([1, 2]);
  });

  it("indexes parents and children", () => {
    expect(m.parents.get("lin_1")).toEqual(["input.0", "a.w"]);
    expect(m.children.get("act_1")).toEqual(["x_1", "y_1"]);
  });

  it("lists the modules to expand to reach a node or group", () => {
    expect(ancestorAddresses(m, "y_2")).toEqual(["b", "b.1"]);
    expect(groupAncestorAddresses(m, "b.1:1")).toEqual(["b"]);
    expect(groupAncestorAddresses(m, "a:1")).toEqual([]);
  });
});

describe("parseGroupKey", () => {
  it("splits the pass off unrolled keys only", () => {
    expect(parseGroupKey("h.0.attn:3", "unrolled")).toEqual(["h.0.attn", 3]);
    expect(parseGroupKey("h.0.attn", "rolled")).toEqual(["h.0.attn", null]);
    for (const key of ["a:b:12", "x:", ":7", "a:1x", "a", "a:1:b", "a\n:3", "m.0:0"])
      expect(parseGroupKey(key, "unrolled")).toEqual(
        ((m) => (m ? [m[1], Number(m[2])] : [key, null]))(/^(.*):(\d+)$/.exec(key)),
      );
  });
});
