// Builds the module-group tree of one view from NodeInfo.groups (with the groups folds.ts
// adds), plus adjacency and per-group summaries (op count, output shape) that the collapsed
// boxes show.
import { type Chunk, chunkNodes } from "./chunks";
import { type AddedKind, foldView } from "./folds";
import { passOutputs } from "./moduleOutputs";
import type { GraphPayload, ModuleInfo, ModuleOutputInfo, NodeInfo, ViewGraph, ViewName } from "./protocol";
import { wrapperPrefix } from "./wrapperPrefix";

export const ROOT = "";
export const SOURCE_KINDS: ReadonlySet<string> = new Set(["param", "buffer", "const"]); // hidden unless parameters are shown

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
  nNodes: number; // nodes in the whole subtree, and of them params/buffers/consts
  nSources: number;
  outShape: number[] | null; // shape of the last value leaving the group
  // a module's outputs (ModuleInfo.outputs of its pass; the rolled view: those all passes
  // share), null for other groups: its box's shape line says them, not outShape
  outputs: ModuleOutputInfo[] | null;
  className: string;
  // Times it ran: a module's passes; in the rolled view a folded block's passes times its blocks.
  nPasses: number;
  // "function": the ops of a plain function of the model's code (create_causal_mask), boxed like a module
  kind: "module" | "function" | AddedKind | "chunk";
  members: string[]; // a stack's block addresses, an output group's node ids
  chunk: Chunk | null; // for a chunk: the run of its box's children it holds (model/chunks.ts)
  aliases: string[]; // rolled: the folded twins whose expansion opens this group too
  prefix?: string; // the model's wrapper prefix ("base_model.model."), left off shown addresses
}

/** A view's nodes by id, with the view's groups (NodeInfo.groups plus the keys the frontend adds). */
export interface NodeLookup {
  get(id: string): NodeInfo | undefined;
  has(id: string): boolean;
}

export interface GraphModel {
  viewName: ViewName;
  view: ViewGraph; // the payload's nodes and edges, untouched: a node's groups here lack the added ones
  groupsOf: readonly (readonly string[])[]; // view.nodes[i]'s groups in this view, added groups included
  nodes: NodeLookup;
  index: Map<string, number>;
  groups: Map<string, GroupNode>;
  modules: Map<string, ModuleInfo>;
  // view.edges[e] runs from node edgeSource[e] to edgeTarget[e] (indexes into view.nodes; -1: unknown id)
  edgeSource: Int32Array;
  edgeTarget: Int32Array;
  readonly parents: Map<string, string[]>; // built on first read
  readonly children: Map<string, string[]>;
}

/** "a.b:3" -> ["a.b", 3] in the unrolled view; rolled keys are plain addresses. */
export function parseGroupKey(key: string, view: ViewName): [string, number | null] {
  // what /^(.*):(\d+)$/ matches, without a regex: asked once per group of a 100k-op graph
  const colon = view === "unrolled" && !key.includes("\n") ? key.lastIndexOf(":") : -1;
  if (colon < 0 || colon === key.length - 1) return [key, null];
  for (let i = colon + 1; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return [key, null];
  }
  return [key.slice(0, colon), Number(key.slice(colon + 1))];
}

// The members and aliases of most groups: one shared empty list, frozen (they are only read).
const NONE = Object.freeze([]) as unknown as string[];

export function edgeKey(source: string, target: string): string {
  return `${source}\n${target}`;
}

export function buildModel(payload: GraphPayload, viewName: ViewName): GraphModel {
  const folds = foldView(payload, viewName);
  const raw = viewName === "rolled" ? payload.rolled : payload.unrolled;
  const addressOf = (key: string): string => (folds.added.has(key) ? key : parseGroupKey(key, viewName)[0]);
  const { groups: groupsOf, chunks } = chunkNodes(raw.nodes, folds.groups, addressOf);
  const view: ViewGraph = { nodes: raw.nodes, edges: raw.edges };
  const modules = new Map(payload.modules.map((m) => [m.address, m]));
  const prefix = wrapperPrefix(modules.keys());
  const index = new Map<string, number>();
  const groups = new Map<string, GroupNode>();
  const mkGroup = (key: string, parent: string | null, depth: number, order: number): GroupNode => {
    const [address, pass] = key === ROOT ? ["", null] : parseGroupKey(key, viewName);
    const mod = modules.get(address);
    // what every group starts with; its contents are counted as nodes are placed below
    const fresh = {
      key,
      parent,
      depth,
      order,
      childGroups: [],
      childNodes: [],
      nOps: 0,
      nNodes: 0,
      nSources: 0,
      outShape: null,
      prefix,
      outputs: null,
    };
    const chunk = chunks.get(key);
    if (chunk)
      return {
        ...fresh,
        address: chunk.address,
        pass: null,
        className: "",
        nPasses: 1,
        kind: "chunk",
        members: NONE,
        aliases: NONE,
        chunk,
      };
    const added = folds.added.get(key);
    if (added)
      return {
        ...fresh,
        address: key,
        pass: null,
        className: added.className,
        nPasses: 1,
        kind: added.kind,
        members: added.members,
        aliases: NONE,
        chunk: null,
      };
    const isFunction = mod?.kind === "function";
    return {
      ...fresh,
      address,
      pass,
      className: isFunction
        ? `${mod.className}()`
        : (mod?.className ?? (key === ROOT ? payload.modelClass : address.split(".").pop() || "Module")),
      nPasses: (mod?.nPasses ?? 1) * (folds.repeat.get(address) ?? 1),
      kind: isFunction ? "function" : "module",
      outputs: isFunction ? null : passOutputs(mod, pass),
      members: NONE,
      aliases: folds.aliases.get(address) ?? NONE,
      chunk: null,
    };
  };
  const root = mkGroup(ROOT, null, 0, 0);
  groups.set(ROOT, root);
  // consecutive nodes mostly share their enclosing groups: reuse the previous node's chain
  let prevKeys: readonly string[] = [];
  const prevChain: GroupNode[] = [];
  const list = view.nodes;
  for (let i = 0; i < list.length; i++) {
    const n = list[i];
    index.set(n.id, i);
    const gs = groupsOf[i];
    const op = n.kind === "op";
    const source = SOURCE_KINDS.has(n.kind);
    root.nNodes++;
    if (source) root.nSources++;
    let parent = root;
    for (let d = 0; d < gs.length; d++) {
      const key = gs[d];
      let g: GroupNode | undefined = d < prevKeys.length && prevKeys[d] === key ? prevChain[d] : undefined;
      if (!g) g = groups.get(key);
      if (!g) {
        g = mkGroup(key, parent.key, d + 1, i);
        groups.set(key, g);
        parent.childGroups.push(key);
      }
      prevChain[d] = g;
      if (op) g.nOps++;
      g.nNodes++;
      if (source) g.nSources++;
      parent = g;
    }
    prevKeys = gs;
    if (op) root.nOps++;
    parent.childNodes.push(n.id);
  }

  // lastOut[g] = index of the latest node in g whose value leaves g
  const lastOut = new Map<string, number>();
  const edgeSource = new Int32Array(view.edges.length);
  const edgeTarget = new Int32Array(view.edges.length);
  for (let k = 0; k < view.edges.length; k++) {
    const e = view.edges[k];
    const si = index.get(e.source) ?? -1;
    const ti = index.get(e.target) ?? -1;
    edgeSource[k] = si;
    edgeTarget[k] = ti;
    if (si < 0 || ti < 0) continue;
    const sg = groupsOf[si];
    const tg = groupsOf[ti];
    let common = 0;
    while (common < sg.length && common < tg.length && sg[common] === tg[common]) common++;
    if (common === sg.length) continue;
    for (let d = common; d < sg.length; d++) {
      const g = sg[d];
      if ((lastOut.get(g) ?? -1) < si) lastOut.set(g, si);
    }
  }
  for (const [g, i] of lastOut) {
    const grp = groups.get(g);
    // a rolled node whose passes differ in shape gives its group none: no one shape is true of all
    if (grp) grp.outShape = view.nodes[i].passShapes ? null : view.nodes[i].shape;
  }
  // parents and children are read when an op is inspected: built then, not before first paint
  let adjacency: [Map<string, string[]>, Map<string, string[]>] | null = null;
  const links = (): [Map<string, string[]>, Map<string, string[]>] => {
    if (adjacency) return adjacency;
    const parents = new Map<string, string[]>();
    const children = new Map<string, string[]>();
    for (const e of view.edges) {
      if (!index.has(e.source) || !index.has(e.target)) continue;
      push(children, e.source, e.target);
      push(parents, e.target, e.source);
    }
    return (adjacency = [parents, children]);
  };
  return {
    viewName,
    view,
    groupsOf,
    nodes: nodeLookup(list, groupsOf, index),
    index,
    groups,
    modules,
    edgeSource,
    edgeTarget,
    get parents() {
      return links()[0];
    },
    get children() {
      return links()[1];
    },
  };
}

/** Nodes by id; one whose groups this view changed is a copy with them, made when first asked for. */
function nodeLookup(
  list: readonly NodeInfo[],
  groupsOf: readonly (readonly string[])[],
  index: ReadonlyMap<string, number>,
): NodeLookup {
  const copies = new Map<number, NodeInfo>();
  return {
    get(id) {
      const i = index.get(id);
      if (i === undefined) return undefined;
      const n = list[i];
      if (n.groups === groupsOf[i]) return n;
      let copy = copies.get(i);
      if (!copy) copies.set(i, (copy = { ...n, groups: groupsOf[i] as string[] }));
      return copy;
    },
    has: (id) => index.has(id),
  };
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
  return n.groups.map((g) => model.groups.get(g)?.address ?? parseGroupKey(g, model.viewName)[0]);
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
