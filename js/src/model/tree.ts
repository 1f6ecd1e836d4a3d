// Builds the module-group tree of one view from NodeInfo.groups (with the groups folds.ts
// adds), plus adjacency and per-group summaries (op count, output shape) that the collapsed
// boxes show.
import { type AddedKind, foldView } from "./folds";
import type { EdgeInfo, GraphPayload, ModuleInfo, NodeInfo, ViewGraph, ViewName } from "./protocol";

export const ROOT = "";

export interface GroupNode {
  key: string; // "" root, "a.b:1" (unrolled) or "a.b" (rolled)
  address: string;
  pass: number | null;
  parent: string | null;
  depth: number; // root 0, top-level modules 1
  childGroups: string[]; // in execution order of first appearance
  childNodes: string[];
  order: number; // index of the first node inside it
  nOps: number; // op nodes in the whole subtree
  outShape: number[] | null; // shape of the last value leaving the group
  className: string;
  // Times it ran: a module's passes; in the rolled view a folded block's passes times its blocks.
  nPasses: number;
  kind: "module" | AddedKind;
  members: string[]; // a stack's block addresses, an output group's node ids
  aliases: string[]; // rolled: the folded twins whose expansion opens this group too
}

export interface GraphModel {
  viewName: ViewName;
  view: ViewGraph;
  nodes: Map<string, NodeInfo>;
  index: Map<string, number>;
  groups: Map<string, GroupNode>;
  modules: Map<string, ModuleInfo>;
  parents: Map<string, string[]>;
  children: Map<string, string[]>;
  edgesByKey: Map<string, EdgeInfo>;
}

/** "a.b:3" -> ["a.b", 3] in the unrolled view; rolled keys are plain addresses. */
export function parseGroupKey(key: string, view: ViewName): [string, number | null] {
  if (view === "unrolled") {
    const m = /^(.*):(\d+)$/.exec(key);
    if (m) return [m[1], Number(m[2])];
  }
  return [key, null];
}

export function edgeKey(source: string, target: string): string {
  return source + "\n" + target;
}

export function buildModel(payload: GraphPayload, viewName: ViewName): GraphModel {
  const folds = foldView(payload, viewName);
  const raw = viewName === "rolled" ? payload.rolled : payload.unrolled;
  const view: ViewGraph = { nodes: folds.nodes, edges: raw.edges };
  const modules = new Map(payload.modules.map((m) => [m.address, m]));
  const nodes = new Map<string, NodeInfo>();
  const index = new Map<string, number>();
  const groups = new Map<string, GroupNode>();
  const mkGroup = (key: string, parent: string | null, depth: number, order: number): GroupNode => {
    const [address, pass] = key === ROOT ? ["", null] : parseGroupKey(key, viewName);
    const mod = modules.get(address);
    const added = folds.added.get(key);
    if (added)
      return {
        key,
        address: key,
        pass: null,
        parent,
        depth,
        childGroups: [],
        childNodes: [],
        order,
        nOps: 0,
        outShape: null,
        className: added.className,
        nPasses: 1,
        kind: added.kind,
        members: added.members,
        aliases: [],
      };
    return {
      key,
      address,
      pass,
      parent,
      depth,
      childGroups: [],
      childNodes: [],
      order,
      nOps: 0,
      outShape: null,
      className: mod?.className ?? (key === ROOT ? payload.modelClass : address.split(".").pop() || "Module"),
      nPasses: (mod?.nPasses ?? 1) * (folds.repeat.get(address) ?? 1),
      kind: "module",
      members: [],
      aliases: folds.aliases.get(address) ?? [],
    };
  };
  groups.set(ROOT, mkGroup(ROOT, null, 0, 0));
  view.nodes.forEach((n, i) => {
    nodes.set(n.id, n);
    index.set(n.id, i);
    let parent = groups.get(ROOT)!;
    for (let d = 0; d < n.groups.length; d++) {
      const key = n.groups[d];
      let g = groups.get(key);
      if (!g) {
        g = mkGroup(key, parent.key, d + 1, i);
        groups.set(key, g);
        parent.childGroups.push(key);
      }
      if (n.kind === "op") g.nOps++;
      parent = g;
    }
    if (n.kind === "op") groups.get(ROOT)!.nOps++;
    parent.childNodes.push(n.id);
  });

  const parents = new Map<string, string[]>();
  const children = new Map<string, string[]>();
  const edgesByKey = new Map<string, EdgeInfo>();
  // lastOut[g] = index of the latest node in g whose value leaves g
  const lastOut = new Map<string, number>();
  for (const e of view.edges) {
    const s = nodes.get(e.source);
    const t = nodes.get(e.target);
    if (!s || !t) continue;
    edgesByKey.set(edgeKey(e.source, e.target), e);
    push(children, e.source, e.target);
    push(parents, e.target, e.source);
    let common = 0;
    while (common < s.groups.length && common < t.groups.length && s.groups[common] === t.groups[common]) common++;
    const si = index.get(e.source)!;
    for (let d = common; d < s.groups.length; d++) {
      const g = s.groups[d];
      if ((lastOut.get(g) ?? -1) < si) lastOut.set(g, si);
    }
  }
  for (const [g, i] of lastOut) {
    const grp = groups.get(g);
    if (grp) grp.outShape = view.nodes[i].shape;
  }
  return { viewName, view, nodes, index, groups, modules, parents, children, edgesByKey };
}

function push(m: Map<string, string[]>, k: string, v: string): void {
  const a = m.get(k);
  if (a) a.push(v);
  else m.set(k, [v]);
}

/** Module addresses of every group enclosing a node (what must be expanded to see it). */
export function ancestorAddresses(model: GraphModel, nodeId: string): string[] {
  const n = model.nodes.get(nodeId);
  if (!n) return [];
  return n.groups.map((g) => parseGroupKey(g, model.viewName)[0]);
}

/** Addresses of a group's enclosing groups, itself excluded. */
export function groupAncestorAddresses(model: GraphModel, key: string): string[] {
  const out: string[] = [];
  let g = model.groups.get(key);
  while (g && g.parent !== null && g.parent !== ROOT) {
    g = model.groups.get(g.parent);
    if (g) out.unshift(g.address);
  }
  return out;
}

/**
 * The node of `target`'s view that stands for node `id` of `source`'s view: in the rolled view
 * the layer a pass belongs to, in the unrolled view a layer's first pass ("" when there is none).
 */
export function counterpartId(id: string, source: GraphModel, target: GraphModel): string {
  if (!id || source.viewName === target.viewName) return id;
  if (target.viewName === "rolled") {
    for (const n of target.view.nodes) if (n.passes.includes(id)) return n.id;
    return "";
  }
  return source.nodes.get(id)?.passes[0] ?? "";
}
