// Small hand-made GraphPayloads for unit tests.
import type { EdgeInfo, GraphPayload, ModuleInfo, NodeInfo, NodeKind } from "../../js/src/graph/protocol";

export function node(id: string, groups: string[], opts: Partial<NodeInfo> & { kind?: NodeKind } = {}): NodeInfo {
  const module = groups.length ? groups[groups.length - 1].replace(/:\d+$/, "") : "";
  return {
    id,
    kind: "op",
    func: id.replace(/_\d+.*$/, ""),
    groups,
    module,
    shape: [1, 4],
    dtype: "float32",
    device: "cpu",
    nbytes: 16,
    params: [],
    hasParams: false,
    fromInput: true,
    feedsOutput: true,
    failed: false,
    intervened: false,
    saved: true,
    noValues: null,
    source: "m.py:1",
    sourceCode: "x = f(x)",
    nPasses: 1,
    passes: [id],
    attention: false,
    ...opts,
  };
}

export function edge(source: string, target: string, passes: number[] = []): EdgeInfo {
  return { source, target, shape: "1x4", passes };
}

/** A payload whose rolled view is unused (tests that only look at one view). */
export function payload(nodes: NodeInfo[], edges: EdgeInfo[], modules: ModuleInfo[] = []): GraphPayload {
  const mods: ModuleInfo[] = [{ address: "", className: "Net", parent: null, nPasses: 1, nOps: 0 }, ...modules];
  const seen = new Set(mods.map((m) => m.address));
  for (const n of nodes)
    for (const g of n.groups) {
      const a = g.replace(/:\d+$/, "");
      if (!seen.has(a)) {
        seen.add(a);
        mods.push({
          address: a,
          className: `Mod_${a}`,
          parent: a.includes(".") ? a.slice(0, a.lastIndexOf(".")) : "",
          nPasses: 1,
          nOps: 0,
        });
      }
    }
  return {
    modelClass: "Net",
    error: null,
    failedOp: null,
    nOps: nodes.filter((n) => n.kind === "op").length,
    modules: mods,
    repeatedBlocks: [],
    unrolled: { nodes, edges },
    rolled: { nodes, edges },
  };
}

/**
 * input -> a.lin(+param a.w) -> a.act -> b.0.x -> b.0.y -> b.1.x -> b.1.y -> out
 * Groups: a, b > b.0, b > b.1 (unrolled keys with ":1").
 */
export function nested(): GraphPayload {
  const nodes = [
    node("input.0", [], { kind: "input", func: "input.0" }),
    node("a.w", ["a:1"], { kind: "param", func: "a.w", fromInput: false }),
    node("lin_1", ["a:1"], { hasParams: true, params: [["a.w", [4, 4]]] }),
    node("act_1", ["a:1"], { shape: [1, 8] }),
    node("x_1", ["b:1", "b.0:1"]),
    node("y_1", ["b:1", "b.0:1"]),
    node("x_2", ["b:1", "b.1:1"]),
    node("y_2", ["b:1", "b.1:1"], { shape: [1, 2] }),
    node("output.0", [], { kind: "output", func: "output.0" }),
  ];
  const edges = [
    edge("input.0", "lin_1"),
    edge("a.w", "lin_1"),
    edge("lin_1", "act_1"),
    edge("act_1", "x_1"),
    edge("act_1", "y_1"),
    edge("x_1", "y_1"),
    edge("y_1", "x_2"),
    edge("x_2", "y_2"),
    edge("y_2", "output.0"),
  ];
  return payload(nodes, edges);
}

/** A metric's values for nested()'s ops (y_1 has none), as the overlay gets them. */
export function nestedValues(): Map<string, number> {
  return new Map([
    ["lin_1", 10],
    ["act_1", 1],
    ["x_1", 2],
    ["y_1", NaN],
    ["x_2", 4],
    ["y_2", 8],
  ]);
}

/** `blocks` top-level modules, each holding `inner` sub-modules of `ops` ops, chained. */
export function wide(blocks: number, inner: number, ops: number): GraphPayload {
  const nodes: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" })];
  const edges: EdgeInfo[] = [];
  let prev = "input.0";
  for (let b = 0; b < blocks; b++)
    for (let i = 0; i < inner; i++)
      for (let o = 0; o < ops; o++) {
        const id = `op_${b}_${i}_${o}`;
        nodes.push(node(id, [`m${b}:1`, `m${b}.s${i}:1`]));
        edges.push(edge(prev, id));
        prev = id;
      }
  nodes.push(node("output.0", [], { kind: "output", func: "output.0" }));
  edges.push(edge(prev, "output.0"));
  return payload(nodes, edges);
}

/**
 * A small GPT: input -> t{emb -> h.0 .. h.{n-1} (each a -> b, b inside h.k.mlp) -> ln} -> head -> output.logits,
 * and a KV output per block from its `a`. The rolled view folds the blocks onto h.0.
 */
export function gpt(n = 3): GraphPayload {
  const un: NodeInfo[] = [node("input.0", [], { kind: "input", func: "input.0" }), node("emb_1_1", ["t:1"])];
  const ue: EdgeInfo[] = [edge("input.0", "emb_1_1")];
  let x = "emb_1_1";
  for (let k = 0; k < n; k++) {
    un.push(node(`a_${k}`, ["t:1", `t.h.${k}:1`]), node(`b_${k}`, ["t:1", `t.h.${k}:1`, `t.h.${k}.mlp:1`]));
    ue.push(edge(x, `a_${k}`), edge(`a_${k}`, `b_${k}`));
    x = `b_${k}`;
  }
  un.push(
    node("ln_1_9", ["t:1"]),
    node("head_1_10", ["head:1"]),
    node("output.logits", [], { kind: "output", func: "output.logits" }),
  );
  ue.push(edge(x, "ln_1_9"), edge("ln_1_9", "head_1_10"), edge("head_1_10", "output.logits"));
  for (let k = 0; k < n; k++) {
    un.push(node(`output.kv.${k}`, [], { kind: "output", func: `output.kv.${k}` }));
    ue.push(edge(`a_${k}`, `output.kv.${k}`));
  }
  const p = payload(un, ue);
  p.modules = p.modules.map((m) => (m.address.match(/^t\.h\.\d+$/) ? { ...m, className: "Block" } : m));
  p.repeatedBlocks = [Array.from({ length: n }, (_, k) => `t.h.${k}`)];
  const passes = (f: string) => Array.from({ length: n }, (_, k) => `${f}_${k}`);
  const rolled: NodeInfo[] = [
    un[0],
    node("emb_1_1", ["t"]),
    node("a_0", ["t", "t.h.0"], { nPasses: n, passes: passes("a") }),
    node("b_0", ["t", "t.h.0", "t.h.0.mlp"], { nPasses: n, passes: passes("b") }),
    node("ln_1_9", ["t"]),
    node("head_1_10", ["head"]),
    ...un.filter((u) => u.kind === "output"),
  ];
  const re: EdgeInfo[] = [
    edge("input.0", "emb_1_1"),
    edge("emb_1_1", "a_0", [1]),
    edge(
      "a_0",
      "b_0",
      passes("a").map((_, i) => i + 1),
    ),
    edge(
      "b_0",
      "a_0",
      passes("a")
        .slice(1)
        .map((_, i) => i + 2),
    ),
    edge("b_0", "ln_1_9", [n]),
    edge("ln_1_9", "head_1_10"),
    edge("head_1_10", "output.logits"),
    ...Array.from({ length: n }, (_, k) => edge("a_0", `output.kv.${k}`, [k + 1])),
  ];
  return { ...p, rolled: { nodes: rolled, edges: re } };
}

/** A seeded PRNG (mulberry32): the same random cases on every run of a property test. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
