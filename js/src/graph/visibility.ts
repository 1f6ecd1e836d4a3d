// Which nodes and module boxes are on screen for a given expansion, and the edges
// between them with endpoints lifted to their visible representatives.
import type { NodeInfo } from "./protocol";
import { edgeKey, type GraphModel, type GroupNode, ROOT, SOURCE_KINDS } from "./tree";

export const GROUP_PREFIX = "@"; // item id of a group: "@" + group key (op ids never start with "@")

export interface VisOptions {
  expanded: ReadonlySet<string>; // module addresses
  showParams: boolean;
}

export interface VisItem {
  id: string; // node id or "@" + group key
  node: NodeInfo | null; // set for nodes
  group: string | null; // set for collapsed groups
  container: string; // group key of the box it sits in ("" root)
}

export interface VisEdge {
  source: string; // item ids
  target: string;
  lca: string; // group whose layout places both (directly or via child boxes)
  direct: boolean; // both endpoints are direct items of lca (dagre routed the edge)
  la: string; // the lca's direct items that stand for source and target in its layout
  lb: string;
  shape: string;
  passes: number[];
  count: number; // how many underlying edges it stands for
}

export interface Visible {
  items: VisItem[]; // ops/sources/sinks and collapsed groups, in execution order
  itemById: Map<string, VisItem>;
  boxes: string[]; // expanded groups shown, parents before children (ROOT first)
  boxChildren: Map<string, string[]>; // box key -> direct item ids (nodes, collapsed groups, "@"+expanded child)
  edges: VisEdge[];
  layoutEdges: Map<string, [string, string][]>; // box key -> edges between its direct items
  rep: RepLookup; // node id -> visible item id (hidden nodes absent)
}

export interface RepLookup {
  get(id: string): string | undefined;
}

export function isShown(n: NodeInfo, showParams: boolean): boolean {
  return showParams || !SOURCE_KINDS.has(n.kind);
}

/** A group is open when its address is in the expanded set, or (rolled view) one of its folded twins is. */
export function groupIsOpen(model: GraphModel, key: string, expanded: ReadonlySet<string>): boolean {
  const g = model.groups.get(key);
  return !!g && (expanded.has(g.address) || g.aliases.some((a) => expanded.has(a)));
}

/** Addresses to open so that node `id` shows: its enclosing groups that are closed. */
export function closedAround(model: GraphModel, id: string, expanded: ReadonlySet<string>): string[] {
  const n = model.nodes.get(id);
  if (!n) return [];
  return n.groups.filter((k) => !groupIsOpen(model, k, expanded)).map((k) => model.groups.get(k)?.address ?? k);
}

/** Addresses to open so that group `key` shows: the closed groups around it (itself excluded). */
export function closedAbove(model: GraphModel, key: string, expanded: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let g = model.groups.get(key);
  while (g && g.parent !== null && g.parent !== ROOT) {
    g = model.groups.get(g.parent);
    if (g && !groupIsOpen(model, g.key, expanded)) out.unshift(g.address);
  }
  return out;
}

/** The expanded set with group `key` opened, or closed under every address it goes by
 * (a folded block's twins too); null for an unknown group. */
export function toggledGroup(
  model: GraphModel,
  key: string,
  expand: boolean,
  expanded: ReadonlySet<string>,
): Set<string> | null {
  const g = model.groups.get(key);
  if (!g) return null;
  const next = new Set(expanded);
  if (expand) next.add(g.address);
  else for (const a of [g.address, ...g.aliases]) next.delete(a);
  return next;
}

/** Every group's address but the root's: all modules open. */
export function allGroups(model: GraphModel): Set<string> {
  return new Set([...model.groups.values()].filter((g) => g.key !== ROOT).map((g) => g.address));
}

export function computeVisible(model: GraphModel, opts: VisOptions): Visible {
  const open = new Map<string, boolean>();
  const isExpanded = (key: string): boolean => {
    let o = open.get(key);
    if (o === undefined) {
      o = groupIsOpen(model, key, opts.expanded);
      open.set(key, o);
    }
    return o;
  };
  const items: VisItem[] = [];
  const itemById = new Map<string, VisItem>();
  const itemIndex = new Map<string, number>();
  const boxChildren = new Map<string, string[]>([[ROOT, []]]);
  const boxes: string[] = [ROOT];
  const list = model.view.nodes;
  const repOf = new Int32Array(list.length).fill(-1); // node index -> index of its item
  const chainLen: number[] = []; // item index -> number of enclosing groups
  const chainOf: (readonly string[])[] = []; // item index -> groups array (prefix of chainLen)

  const addChild = (box: string, id: string): void => {
    let arr = boxChildren.get(box);
    if (!arr) {
      arr = [];
      boxChildren.set(box, arr);
      boxes.push(box);
    }
    arr.push(id);
  };

  // Consecutive nodes in one closed group are one item: the previous node's closed group is
  // checked first, so a huge collapsed graph costs a few string compares per node.
  let prevGroups: readonly string[] = [];
  let prevCut = -1; // depth of the previous node's closed group, -1 when it showed itself
  let prevItem = -1;
  // An output of the model is never hidden in a closed box (its output group may be placed
  // beside its producers, inside a module): it stays in the innermost open one.
  const outputPath = (gs: readonly string[]): readonly string[] => {
    for (let d = 0; d < gs.length; d++) {
      if (isExpanded(gs[d]) || model.groups.get(gs[d])?.kind === "outputs") continue;
      const last = gs[gs.length - 1];
      return model.groups.get(last)?.kind === "outputs" ? [...gs.slice(0, d), last] : gs.slice(0, d);
    }
    return gs;
  };
  // the op of a module that returns its input unchanged, in view but not opened: shown as
  // (folded into) the op that made its input, so the box and its edges go (passThrough.ts)
  const foldedInto = (n: NodeInfo, gs: readonly string[]): number => {
    const key = gs[gs.length - 1];
    const g = key === undefined ? undefined : model.groups.get(key);
    if (g?.kind !== "module" || !model.modules.get(g.address)?.passThrough) return -1;
    if (opts.expanded.has(g.address) || n.kind !== "op") return -1;
    for (let d = 0; d < gs.length - 1; d++) if (!isExpanded(gs[d])) return -1;
    const from = model.parents.get(n.id) ?? [];
    const at = from.length === 1 ? model.index.get(from[0]) : undefined;
    return at === undefined ? -1 : repOf[at];
  };
  for (let i = 0; i < list.length; i++) {
    const n = list[i];
    if (!isShown(n, opts.showParams)) continue;
    const gs = n.kind === "output" ? outputPath(model.groupsOf[i]) : model.groupsOf[i];
    const folded = foldedInto(n, gs);
    if (folded >= 0) {
      repOf[i] = folded;
      continue;
    }
    if (prevCut >= 0 && gs.length > prevCut) {
      let same = true;
      for (let d = prevCut; d >= 0 && same; d--) same = gs[d] === prevGroups[d];
      if (same) {
        repOf[i] = prevItem;
        continue;
      }
    }
    let container = ROOT;
    let id = n.id;
    let depth = gs.length;
    for (let d = 0; d < gs.length; d++) {
      const g = gs[d];
      if (!isExpanded(g)) {
        id = GROUP_PREFIX + g;
        depth = d;
        break;
      }
      // an expanded group becomes an item of its container the first time it is met
      if (!boxChildren.has(g)) {
        addChild(container, GROUP_PREFIX + g);
        boxChildren.set(g, []);
        boxes.push(g);
      }
      container = g;
    }
    let at = itemIndex.get(id);
    if (at === undefined) {
      at = items.length;
      const item: VisItem = {
        id,
        node: id === n.id ? n : null,
        group: id === n.id ? null : id.slice(GROUP_PREFIX.length),
        container,
      };
      items.push(item);
      itemById.set(id, item);
      itemIndex.set(id, at);
      addChild(container, id);
      chainLen.push(depth);
      chainOf.push(gs);
    }
    repOf[i] = at;
    prevGroups = gs;
    prevCut = depth < gs.length ? depth : -1;
    prevItem = at;
  }

  const edges: VisEdge[] = [];
  const byPair = new Map<number, VisEdge>();
  const layoutEdges = new Map<string, [string, string][]>();
  const layoutSeen = new Set<string>();
  const viewEdges = model.view.edges;
  for (let k = 0; k < viewEdges.length; k++) {
    const si = model.edgeSource[k];
    const ti = model.edgeTarget[k];
    if (si < 0 || ti < 0) continue;
    const ia = repOf[si];
    const ib = repOf[ti];
    if (ia < 0 || ib < 0 || ia === ib) continue;
    const e = viewEdges[k];
    const pair = ia * items.length + ib;
    const prev = byPair.get(pair);
    if (prev) {
      prev.count++;
      for (const p of e.passes) if (!prev.passes.includes(p)) prev.passes.push(p);
      continue;
    }
    const rs = items[ia].id;
    const rt = items[ib].id;
    const cs = chainOf[ia];
    const ct = chainOf[ib];
    const ls = chainLen[ia];
    const lt = chainLen[ib];
    let common = 0;
    while (common < ls && common < lt && cs[common] === ct[common]) common++;
    const lca = common === 0 ? ROOT : cs[common - 1];
    const a = ls > common ? GROUP_PREFIX + cs[common] : rs;
    const b = lt > common ? GROUP_PREFIX + ct[common] : rt;
    const ve: VisEdge = {
      source: rs,
      target: rt,
      lca,
      direct: a === rs && b === rt,
      la: a,
      lb: b,
      shape: e.shape,
      passes: [...e.passes],
      count: 1,
    };
    edges.push(ve);
    byPair.set(pair, ve);
    // a and b sit directly in the lca's box (every item has one box), so they name the lca too
    const lk = edgeKey(a, b);
    if (a !== b && !layoutSeen.has(lk)) {
      layoutSeen.add(lk);
      let arr = layoutEdges.get(lca);
      if (!arr) layoutEdges.set(lca, (arr = []));
      arr.push([a, b]);
    }
  }
  const rep: RepLookup = {
    get: (id) => {
      const i = model.index.get(id);
      const at = i === undefined ? -1 : repOf[i];
      return at < 0 ? undefined : items[at].id;
    },
  };
  return { items, itemById, boxes, boxChildren, edges, layoutEdges, rep };
}

/**
 * How many items computeVisible would show for this expansion, from the group tree alone
 * (each open box's closed child groups and shown child nodes): no pass over the nodes.
 */
export function countVisible(model: GraphModel, opts: VisOptions): number {
  const shown = (g: GroupNode): boolean => (opts.showParams ? g.nNodes : g.nNodes - g.nSources) > 0;
  let count = 0;
  const stack = [ROOT];
  while (stack.length) {
    const box = model.groups.get(stack.pop()!)!;
    for (const id of box.childNodes) if (isShown(model.nodes.get(id)!, opts.showParams)) count++;
    for (const key of box.childGroups) {
      const g = model.groups.get(key)!;
      if (!shown(g)) continue;
      if (groupIsOpen(model, key, opts.expanded)) stack.push(key);
      else count++;
    }
  }
  return count;
}

/** The modules that return their input unchanged folded away in view now (not opened, their
 * boxes around them open): a count on the graph says so and opens them (passThrough.ts). */
export function foldedPassThrough(model: GraphModel, expanded: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const g of model.groups.values()) {
    if (g.kind !== "module" || !model.modules.get(g.address)?.passThrough || expanded.has(g.address)) continue;
    let p = g.parent;
    let shown = true;
    while (p !== null && p !== ROOT && shown) {
      shown = groupIsOpen(model, p, expanded);
      p = model.groups.get(p)?.parent ?? null;
    }
    if (shown) out.add(g.address);
  }
  return [...out];
}
