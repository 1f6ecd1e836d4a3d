// Small hand-made GraphPayloads for unit tests.
import type { EdgeInfo, GraphPayload, ModuleInfo, NodeInfo, NodeKind } from "../../js/src/model/protocol";

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
    saved: true,
    source: "m.py:1",
    sourceCode: "x = f(x)",
    nPasses: 1,
    passes: [id],
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
        mods.push({ address: a, className: `Mod_${a}`, parent: a.includes(".") ? a.slice(0, a.lastIndexOf(".")) : "", nPasses: 1, nOps: 0 });
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
