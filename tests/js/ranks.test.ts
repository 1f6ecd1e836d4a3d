// The rank picker's logic and the collectives' labels and facts (js/src/ranks/), and the
// "bytes communicated" overlay's place in the picker (offered only with collectives).
import { describe, expect, it } from "vitest";
import type { CollectiveNodeInfo, GraphPayload, RanksInfo } from "../../js/src/graph/protocol";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { nodeLines } from "../../js/src/layout/labels";
import { fmtBytes, fmtShape } from "../../js/src/panel/format";
import { collectiveFacts, collectiveLines, groupText, placementFacts } from "../../js/src/ranks/collectives";
import { compareChoices, rankCaption, rankName, sameRankGraph, showRankParams } from "../../js/src/ranks/rankLogic";
import { itemValues, metricInfo, offeredMetrics } from "../../js/src/render/overlay";
import { edge, node, payload } from "./builders";

const REDUCE: CollectiveNodeInfo = {
  kind: "all_reduce",
  groupRanks: [0, 1],
  nbytes: 256,
  phase: "forward",
  engine: "dtensor",
};

function ranked(ranks: Partial<RanksInfo> = {}, ids = ["lin_1", "add_1", "out_1"]): GraphPayload {
  const nodes = ids.map((id) => node(id, [], id === "add_1" ? { collective: REDUCE } : {}));
  const edges = ids.slice(1).map((id, i) => edge(ids[i], id));
  const p = payload(nodes, edges);
  return { ...p, ranks: { ranks: [0, 1, 2], worldSize: 4, shown: 0, compareWith: null, ...ranks } };
}

describe("rank picker logic", () => {
  it("names ranks within their world, and offers the other ranks to compare with", () => {
    const info = ranked({ shown: 1 }).ranks!;
    expect(rankName(2, info)).toBe("rank 2 of 4");
    expect(rankName(2, { worldSize: null })).toBe("rank 2");
    expect(compareChoices(info)).toEqual([0, 2]);
  });

  it("asks for a comparison only with another rank", () => {
    expect(showRankParams(1, null)).toEqual({ rank: 1 });
    expect(showRankParams(1, 1)).toEqual({ rank: 1 });
    expect(showRankParams(1, 0)).toEqual({ rank: 1, compareWith: 0 });
  });

  it("says which rank is shown, and which is A and B of a comparison", () => {
    expect(rankCaption(ranked({ shown: 2 }).ranks!)).toContain("showing rank 2 of 4");
    const caption = rankCaption(ranked({ shown: 0, compareWith: 2 }).ranks!);
    expect(caption).toContain("rank 0 (A) compared with rank 2 (B)");
    expect(caption).toContain("relative difference");
  });

  it("keeps the layout only for another rank of the same graph", () => {
    const shown = ranked();
    expect(sameRankGraph(shown, ranked({ shown: 1 }))).toBe(true);
    expect(sameRankGraph(shown, ranked({ compareWith: 1 }))).toBe(true);
    expect(sameRankGraph(null, shown)).toBe(false); // a first graph is fitted
    expect(sameRankGraph(shown, ranked({ shown: 1 }, ["lin_1", "add_1", "relu_1"]))).toBe(false);
    const { ranks: _, ...plain } = ranked({ shown: 1 });
    expect(sameRankGraph(shown, plain)).toBe(false); // a widget of one log: as before
    const rewired = ranked({ shown: 1 });
    rewired.unrolled.edges = [edge("lin_1", "out_1"), edge("add_1", "out_1")];
    expect(sameRankGraph(shown, rewired)).toBe(false);
  });
});

describe("collectives", () => {
  it("label a collective with its kind and group size, before its shape", () => {
    const n = node("add_1", [], { collective: REDUCE, shape: [4, 16] });
    expect(nodeLines(n)).toEqual(["⇄ all_reduce", "2 ranks · 4×16"]);
    expect(collectiveLines({ ...n, nPasses: 3 }, REDUCE, "")).toEqual(["⇄ all_reduce ×3", "2 ranks"]);
    expect(groupText({ ...REDUCE, groupRanks: [3] })).toBe("1 rank");
    expect(nodeLines(node("lin_1", []))[0]).toBe("lin"); // other ops as before
  });

  it("list kind, group, bytes, phase and engine in the inspector", () => {
    expect(collectiveFacts(REDUCE, fmtBytes)).toEqual([
      ["collective", "all_reduce"],
      ["group", "2 ranks: 0, 1"],
      ["sent", fmtBytes(256)],
      ["phase", "forward"],
      ["engine", "dtensor"],
    ]);
    const big = { ...REDUCE, groupRanks: [...Array(64).keys()], engine: "" };
    const facts = Object.fromEntries(collectiveFacts(big, fmtBytes));
    expect(facts.group).toBe("64 ranks: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, …");
    expect(facts.engine).toBe("the model's own call");
  });
});

describe("sharded parameters", () => {
  it("list placements on the named mesh, full and local shape, and the gradient's kind", () => {
    const p = {
      fullShape: [16, 8],
      localShape: [8, 8],
      placements: ["Shard(dim=0)"],
      meshShape: [2],
      meshDimNames: ["tp"],
      grad: "local shard",
    };
    expect(placementFacts(p, fmtShape)).toEqual([
      ["sharded", "Shard(dim=0) on mesh (tp=2)"],
      ["full shape", fmtShape([16, 8])],
      ["this rank", fmtShape([8, 8])],
      ["gradient", "local shard"],
    ]);
    const mesh2d = { ...p, placements: ["Replicate()", "Shard(dim=1)"], meshShape: [2, 4], meshDimNames: [] };
    expect(placementFacts(mesh2d, fmtShape)[0][1]).toBe("Replicate(), Shard(dim=1) on mesh (2, 4)");
  });
});

describe("bytes communicated overlay", () => {
  it("is offered only for a log with collectives, and sums over a module", () => {
    expect(offeredMetrics(false, false).map((m) => m.name)).not.toContain("commBytes");
    expect(offeredMetrics(false, false, true).map((m) => m.name)).toContain("commBytes");
    expect(offeredMetrics(true, true, true).map((m) => m.name)).toEqual(
      expect.arrayContaining(["relL2", "gradNorm", "commBytes"]),
    );
    const info = metricInfo("commBytes");
    expect(info).toMatchObject({ label: "bytes communicated", agg: "sum" });
    // two collectives in module m, one outside: a collapsed m shows the bytes of both
    const nodes = [
      node("ag_1", ["m:1"], { collective: { ...REDUCE, kind: "all_gather_into_tensor" } }),
      node("ar_1", ["m:1"], { collective: REDUCE }),
      node("lin_1", ["m:1"]),
      node("rs_1", [], { collective: REDUCE }),
    ];
    const model = buildModel(
      payload(nodes, [edge("ag_1", "ar_1"), edge("ar_1", "lin_1"), edge("lin_1", "rs_1")]),
      "unrolled",
    );
    const vis = computeVisible(model, { expanded: new Set(), showParams: false });
    const sent = new Map([
      ["ag_1", 100],
      ["ar_1", 28],
      ["lin_1", NaN],
      ["rs_1", 64],
    ]);
    const byItem = itemValues(model, vis, sent, info.agg);
    expect(byItem.get("@m:1")).toBe(128);
    expect(byItem.get("rs_1")).toBe(64);
  });
});
