import { describe, expect, it } from "vitest";
import { search } from "../../js/src/graph/search";
import { buildModel } from "../../js/src/graph/tree";
import { nested, node, payload, wide } from "./builders";

const m = buildModel(nested(), "unrolled");

describe("search", () => {
  it("matches op ids and funcs, best matches first", () => {
    const hits = search(m, "lin");
    expect(hits[0]).toMatchObject({ kind: "node", id: "lin_1" });
  });

  it("matches module addresses", () => {
    const hits = search(m, "b.1");
    expect(hits.map((h) => `${h.kind}:${h.id}`)).toContain("group:b.1:1");
    // ops inside b.1 match through their module
    expect(hits.map((h) => h.id)).toContain("x_2");
    expect(hits.map((h) => h.id)).not.toContain("x_1");
  });

  it("is case-insensitive and empty for blank queries", () => {
    expect(search(m, "ACT").map((h) => h.id)).toContain("act_1");
    expect(search(m, "  ")).toEqual([]);
    expect(search(m, "nothing-like-this")).toEqual([]);
  });
});

describe("search ranking", () => {
  it("puts a module before the ops found only through it", () => {
    const hits = search(m, "b.0");
    expect(hits[0]).toMatchObject({ kind: "group", id: "b.0:1" });
  });

  it("leaves hidden parameters out unless they are shown", () => {
    expect(search(m, "a.w", 30, false).map((h) => h.id)).not.toContain("a.w");
    expect(search(m, "a.w", 30, true)[0].id).toBe("a.w");
  });
});

describe("search that lands (#24)", () => {
  it("ranks ops of a function before modules whose class has that name", () => {
    const modules = [{ address: "conv", className: "Conv2d", parent: "", nPasses: 1, nOps: 1 }];
    const conv = buildModel(payload([node("conv2d_1", ["conv:1"])], [], modules), "unrolled");
    const hits = search(conv, "conv2d");
    expect(hits.map((h) => `${h.kind}:${h.id}`)).toEqual(["node:conv2d_1", "group:conv:1"]);
  });

  it("keeps ops found through their module when many modules match", () => {
    const many = buildModel(wide(6, 1, 1), "unrolled");
    const hits = search(many, "m", 4);
    expect(hits.map((h) => h.kind)).toEqual(["group", "group", "node", "node"]);
  });
});
