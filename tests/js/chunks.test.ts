import { describe, expect, it } from "vitest";
import { CHUNK_LIMIT, chunkSpans } from "../../js/src/graph/chunks";
import { defaultExpansion } from "../../js/src/graph/defaultExpansion";
import type { EdgeInfo, NodeInfo } from "../../js/src/graph/protocol";
import { search } from "../../js/src/graph/search";
import { buildModel, type GraphModel, ROOT } from "../../js/src/graph/tree";
import { closedAround, computeVisible, countVisible } from "../../js/src/graph/visibility";
import { type GroupLayout, runJobs } from "../../js/src/layout/boxLayout";
import { DEFAULT_METRICS, groupLines } from "../../js/src/layout/labels";
import { planLayout, SizeCache } from "../../js/src/layout/scenePlan";
import { edge, node, payload } from "./builders";
import { crossings, laidOut } from "./geometry";

/** `n` ops in one chain straight under the model, no module at all. */
function flat(n: number) {
  const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
  const edges: EdgeInfo[] = [];
  let prev = "input.0";
  for (let i = 0; i < n; i++) {
    const id = `op_${i}`;
    nodes.push(node(id, []));
    edges.push(edge(prev, id));
    prev = id;
  }
  nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
  edges.push(edge(prev, "output.0"));
  return payload(nodes, edges);
}

/** `n` sibling blocks of two ops each, with a skip edge from every block to the one after next. */
function blocks(n: number) {
  const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
  const edges: EdgeInfo[] = [];
  let prev = "input.0";
  for (let b = 0; b < n; b++) {
    nodes.push(node(`a_${b}`, [`blk.${b}:1`]), node(`b_${b}`, [`blk.${b}:1`]));
    edges.push(edge(prev, `a_${b}`), edge(`a_${b}`, `b_${b}`));
    if (b >= 2) edges.push(edge(`a_${b - 2}`, `b_${b}`));
    prev = `b_${b}`;
  }
  nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
  edges.push(edge(prev, "output.0"));
  return payload(nodes, edges);
}

const children = (m: GraphModel, key: string): number => {
  const g = m.groups.get(key)!;
  return g.childGroups.length + g.childNodes.length;
};

/** Lays out what `expanded` shows; fails on a job bigger than a chunk allows. */
function layOut(m: GraphModel, expanded: Iterable<string>, cache = new Map<string, GroupLayout>()) {
  const vis = computeVisible(m, { expanded: new Set(expanded), showParams: false });
  const plan = planLayout(vis, new SizeCache(m, DEFAULT_METRICS), cache, "u|");
  for (const j of plan.jobs) expect(j.items.length).toBeLessThanOrEqual(CHUNK_LIMIT);
  for (const r of runJobs(plan.jobs)) cache.set(r.key, r);
  return { vis, plan };
}

describe("chunks of huge boxes", () => {
  it("splits only past the limit, in even runs, and in levels past the limit squared", () => {
    expect(chunkSpans(CHUNK_LIMIT)).toEqual([]);
    expect(chunkSpans(201)).toEqual([67]); // 3 chunks of 67, not 100 + 100 + 1
    expect(chunkSpans(4774)).toEqual([100]);
    expect(chunkSpans(100_002)).toEqual([10_000, 100]);
  });

  it("leaves a box that fits alone: same nodes, no chunk", () => {
    const p = blocks(50);
    const m = buildModel(p, "unrolled");
    expect([...m.groups.values()].some((g) => g.kind === "chunk")).toBe(false);
    expect(m.view.nodes).toBe(p.unrolled.nodes);
  });

  it("keeps the chunk keys in the view's groups, not in the payload's nodes, which stay as sent", () => {
    const p = blocks(300);
    const sent = p.unrolled.nodes.map((n) => [...n.groups]);
    const m = buildModel(p, "unrolled");
    expect(m.view.nodes).toBe(p.unrolled.nodes); // no copy of every node
    expect(p.unrolled.nodes.map((n) => n.groups)).toEqual(sent);
    const i = m.index.get("a_150")!;
    expect(m.groupsOf[i]).toEqual(["#77-152", "blk.150:1"]); // 302 children: chunks of 76
    expect(m.nodes.get("a_150")!.groups).toEqual(m.groupsOf[i]); // a lookup has the view's groups
    expect(m.nodes.get("a_150")).toBe(m.nodes.get("a_150"));
    expect(buildModel(p, "unrolled").groupsOf[i]).toEqual(m.groupsOf[i]); // built twice: the same
  });

  it("a flat box of 100,000 ops: bounded layout jobs, and every op reachable", () => {
    const m = buildModel(flat(100_000), "unrolled");
    for (const g of m.groups.values()) expect(children(m, g.key)).toBeLessThanOrEqual(CHUNK_LIMIT);
    const chunks = [...m.groups.values()].filter((g) => g.kind === "chunk");
    // 100,002 children: 1,001 chunks of 100 in 11 chunks of chunks; the last of those holds
    // only the last 2 children, directly (a chunk of one chunk would be the same range twice)
    expect(m.groups.get(ROOT)!.childGroups).toHaveLength(11);
    expect(m.groups.get(ROOT)!.childGroups.at(-1)).toBe("#100001-100002");
    expect(chunks).toHaveLength(11 + 1000);
    expect(m.groups.get(ROOT)!.nOps).toBe(100_000);
    expect(chunks.filter((g) => g.parent === ROOT).reduce((s, g) => s + g.nOps, 0)).toBe(100_000);

    // the first view: 11 boxes and the output (never hidden in a closed chunk), in one small job
    const first = defaultExpansion(m, false);
    const { vis, plan } = layOut(m, first);
    expect(vis.items).toHaveLength(12);
    expect(vis.itemById.has("output.0")).toBe(true);
    expect(plan.jobs).toHaveLength(1);

    // any op: opening what encloses it shows it, with every job small
    for (const [id, depth] of [
      ["op_0", 2],
      ["op_54321", 2],
      ["op_99998", 2],
      ["output.0", 1],
    ] as const) {
      const need = closedAround(m, id, new Set(first));
      expect(need).toHaveLength(depth); // its chunk of chunks, then its chunk
      const { vis: shown } = layOut(m, [...first, ...need]);
      expect(shown.rep.get(id)).toBe(id);
      expect(shown.items.length).toBeLessThanOrEqual(11 + 100 + 100);
    }
    // and every op sits in exactly one chunk of 100 or fewer
    const seen = new Set<string>();
    for (const g of chunks) for (const id of g.childNodes) seen.add(id);
    expect(seen.size).toBe(100_002);
  });

  it("names a chunk by its first and last child and its place in the box", () => {
    const m = buildModel(blocks(450), "unrolled");
    const root = m.groups.get(ROOT)!;
    // 452 children (450 blocks, input, output) in 5 even chunks
    expect(root.childGroups).toEqual(["#1-91", "#92-182", "#183-273", "#274-364", "#365-452"]);
    const first = m.groups.get("#1-91")!;
    expect(first.address).toBe("#1-91");
    expect(groupLines(first, "unrolled").slice(0, 2)).toEqual(["input.0 … blk.89", "1–91 of 452 in the model"]);
    expect(groupLines(m.groups.get("#92-182")!, "unrolled")[0]).toBe("blk.90…180");
    expect(first.nOps).toBe(2 * 90);
  });

  it("lifts edges to chunks and draws none across a box it does not connect", () => {
    const p = blocks(450);
    const m = buildModel(p, "unrolled");
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    // chunks follow each other, the skip edges that leave a chunk included
    expect(vis.layoutEdges.get(ROOT)).toEqual([
      ["@#1-91", "@#92-182"],
      ["@#92-182", "@#183-273"],
      ["@#183-273", "@#274-364"],
      ["@#274-364", "@#365-452"],
      ["@#365-452", "output.0"], // the output stays out of the closed chunk
    ]);
    expect(countVisible(m, { expanded: new Set(), showParams: false })).toBe(5);
    // open two chunks side by side and a block in each: routes stay out of boxes they don't connect
    const { scene, geoms, v, m: model } = laidOut(p, ["#1-91", "#92-182", "blk.89", "blk.90"]);
    expect(v.items.length).toBeGreaterThan(150);
    expect(crossings(scene, geoms, v, model)).toEqual([]);
  });

  it("search finds an op inside a chunk, lists no chunk, and selecting it opens its chunk", () => {
    const m = buildModel(blocks(450), "unrolled");
    const hits = search(m, "b_321");
    expect(hits[0]).toMatchObject({ kind: "node", id: "b_321" });
    expect(search(m, "#").filter((h) => h.kind === "group")).toEqual([]);
    expect(closedAround(m, "b_321", new Set())).toEqual(["#274-364", "blk.321"]);
  });

  it("rolled view and a huge module box chunk the same way, by the module's address", () => {
    const nodes: NodeInfo[] = [];
    const edges: EdgeInfo[] = [];
    for (let i = 0; i < 300; i++) {
      nodes.push(node(`op_${i}`, ["enc:1"]));
      if (i) edges.push(edge(`op_${i - 1}`, `op_${i}`));
    }
    const m = buildModel(payload(nodes, edges), "unrolled");
    expect(m.groups.get("enc:1")!.childGroups).toEqual(["enc:1#1-100", "enc:1#101-200", "enc:1#201-300"]);
    // the expanded set holds the module's address, for every pass
    expect(m.groups.get("enc:1#101-200")!.address).toBe("enc#101-200");
    expect(closedAround(m, "op_150", new Set(["enc"]))).toEqual(["enc#101-200"]);
  });
});
