// The column fast paths of the box layout (boxLayout.ts): most module boxes (Linear,
// LayerNorm, an MLP, a stack of blocks) are a chain, and stacking them in one column is what
// dagre would do at a fraction of its fixed cost per call. Edges to a chain's ports (a stack
// whose every block feeds a KV-cache output) run in one lane beside the column, where dagre
// would thread each through hundreds of dummy nodes.

export const LAYOUT_OPTS = { rankdir: "TB", nodesep: 22, ranksep: 26, edgesep: 8, marginx: 0, marginy: 0 } as const;

export const PORT_IN = "⤒in";
export const PORT_OUT = "⤓out";
export const PORT_SIZE = 2;
const GAP = LAYOUT_OPTS.ranksep / 2; // where a lane turns, between two items of the column
const LANE = LAYOUT_OPTS.nodesep; // from the column's widest item to its lane

/** A layout problem: items (ports included) in order, their sizes, edges. */
export interface Placed {
  items: { id: string }[];
  sizes: Map<string, [number, number]>;
  edges: [string, string][];
}

/** A layout by item and edge index, top-left at (0, 0); routes already drawable. */
export interface RawLayout {
  w: number;
  h: number;
  pos: Float64Array; // x0, y0, x1, y1, ... item centres
  edges: (number[] | null)[]; // per edge: flat route
}

/** RawLayout's `pos` of `items` from their centres `at` (an item with none at the origin). */
export function centres(items: readonly { id: string }[], at: ReadonlyMap<string, [number, number]>): Float64Array {
  const pos = new Float64Array(items.length * 2);
  items.forEach((it, i) => {
    const [x, y] = at.get(it.id) ?? [0, 0];
    pos[2 * i] = x;
    pos[2 * i + 1] = y;
  });
  return pos;
}

/** Where an edge leaves an item (`low`, its bottom) and enters one (`top`), by their centres `at`. */
export function itemEnds(
  at: ReadonlyMap<string, [number, number]>,
  sizes: ReadonlyMap<string, [number, number]>,
): { top: (id: string) => number; low: (id: string) => number } {
  return {
    top: (id) => at.get(id)![1] - sizes.get(id)![1] / 2,
    low: (id) => at.get(id)![1] + sizes.get(id)![1] / 2,
  };
}

/** True when every edge joins an item to the next one: a straight column, no dagre needed. */
export function isChain(items: readonly { id: string }[], edges: readonly [string, string][]): boolean {
  const pos = new Map<string, number>();
  items.forEach((it, i) => pos.set(it.id, i));
  for (const [a, b] of edges) {
    const ia = pos.get(a);
    const ib = pos.get(b);
    if (ia === undefined || ib === undefined) continue;
    if (ib !== ia + 1) return false;
  }
  return true;
}

export function chainLayout(p: Placed): RawLayout {
  let maxW = 0;
  for (const [w] of p.sizes.values()) maxW = Math.max(maxW, w);
  const pos = new Float64Array(p.items.length * 2);
  let y = 0;
  p.items.forEach((it, i) => {
    const [, h] = p.sizes.get(it.id)!;
    pos[2 * i] = maxW / 2;
    pos[2 * i + 1] = y + h / 2;
    y += h + LAYOUT_OPTS.ranksep;
  });
  const index = new Map(p.items.map((it, i) => [it.id, i]));
  const edges = p.edges.map(([a, b]) => {
    const ia = index.get(a);
    const ib = index.get(b);
    if (ia === undefined || ib === undefined) return null;
    return [maxW / 2, pos[2 * ia + 1] + p.sizes.get(a)![1] / 2, maxW / 2, pos[2 * ib + 1] - p.sizes.get(b)![1] / 2];
  });
  return { w: maxW, h: p.items.length ? y - LAYOUT_OPTS.ranksep : 0, pos, edges };
}

/**
 * A chain with ports: the column, the in port's lane on its left and the out port's on its
 * right. An edge from the in port runs down its lane and turns into its item in the gap above
 * it; an edge to the out port leaves its item's bottom, turns in the gap below it and runs
 * down the right lane. Nothing in a lane or a gap: no route crosses an item.
 */
export function lanesLayout(p: Placed, portIn: boolean, portOut: boolean): RawLayout {
  const column = p.items.filter((it) => it.id !== PORT_IN && it.id !== PORT_OUT);
  let maxW = 0;
  for (const it of column) maxW = Math.max(maxW, p.sizes.get(it.id)![0]);
  const cx = (portIn ? LANE : 0) + maxW / 2;
  const inX = PORT_SIZE / 2;
  const outX = (portIn ? LANE : 0) + maxW + LANE;
  const at = new Map<string, [number, number]>(); // centre
  let y = portIn ? PORT_SIZE + GAP : 0;
  for (const it of column) {
    const [, h] = p.sizes.get(it.id)!;
    at.set(it.id, [cx, y + h / 2]);
    y += h + LAYOUT_OPTS.ranksep;
  }
  const bottom = column.length ? y - LAYOUT_OPTS.ranksep : y;
  if (portIn) at.set(PORT_IN, [inX, PORT_SIZE / 2]);
  if (portOut) at.set(PORT_OUT, [outX, bottom + GAP + PORT_SIZE / 2]);
  const { top, low } = itemEnds(at, p.sizes);
  const edges = p.edges.map(([a, b]): number[] | null => {
    if (!at.has(a) || !at.has(b)) return null;
    if (a === PORT_IN) return [inX, low(a), inX, top(b) - GAP, cx, top(b) - GAP, cx, top(b)];
    if (b === PORT_OUT) return [cx, low(a), cx, low(a) + GAP, outX, low(a) + GAP, outX, top(b)];
    return [cx, low(a), cx, top(b)];
  });
  const pos = centres(p.items, at);
  const w = portOut ? outX + PORT_SIZE / 2 : (portIn ? LANE : 0) + maxW;
  return { w, h: portOut ? bottom + GAP + PORT_SIZE : bottom, pos, edges };
}
