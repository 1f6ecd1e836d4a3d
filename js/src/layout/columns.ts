// A tall chain in a wide view, wrapped into columns (the graph uses the width it has, issue 24):
// a box whose content is a chain (a stack of blocks, a long Sequential) and would be taller
// than the view holds at a readable zoom is cut into columns side by side, read top to bottom
// then left to right. The edge from one column to the next leaves the bottom of the column,
// runs up the gutter between the two and over the next column's top into its first item.
// With ports (edges from or to outside the box, chain.ts's lanes), each column has its own
// in lane on its left and out lane on its right; the in port's run is along the very top, the
// out port's along the very bottom, so no route crosses an item.
import { centres, itemEnds, LAYOUT_OPTS, type Placed, PORT_IN, PORT_OUT, PORT_SIZE, type RawLayout } from "./chain";

const GAP = LAYOUT_OPTS.ranksep / 2;
const LANE = LAYOUT_OPTS.nodesep;

/** The most a box's content may take before its chain wraps, in graph units (see wrapFor). */
export interface Wrap {
  h: number;
  w: number;
}

// a view at least this much wider than tall may put columns side by side (splitColumns then
// checks that the columns it cuts fit the width)
const WIDE = 1.2;
// a column should read at this zoom (node text ~8 px and up)
const READ_SCALE = 0.75;
const DOMINANT = 0.6; // an item taller than this share of a column keeps the chain in one
const STEP = 100; // wraps are decided in steps, so a resize by a few pixels lays out nothing anew

/** The wrap for a view of width x height (screen px): none where the view is not wide. */
export function wrapFor(width: number, height: number): Wrap | null {
  if (width < WIDE * height || height < 100) return null;
  const q = (v: number): number => Math.max(STEP, Math.floor(v / STEP) * STEP);
  return { h: q((height - 60) / READ_SCALE), w: q((width - 60) / READ_SCALE) };
}

/** A wrap as a layout cache key's part ("" for none). */
export const wrapKey = (wrap: Wrap | null): string => (wrap ? `${wrap.w}x${wrap.h}` : "");

/** The height of `column` stacked as one column. */
function stackHeight(p: Placed, ids: readonly string[]): number {
  let h = 0;
  for (const id of ids) h += p.sizes.get(id)![1];
  return h + Math.max(0, ids.length - 1) * LAYOUT_OPTS.ranksep;
}

/**
 * The columns `chain` (item ids in order) is cut into to fit `wrap`: balanced heights, as
 * many as the height needs and the width allows; null when one column is best.
 */
export function splitColumns(p: Placed, chain: readonly string[], wrap: Wrap): string[][] | null {
  const total = stackHeight(p, chain);
  if (total <= wrap.h || chain.length < 4) return null;
  let widest = 0;
  let tallest = 0;
  for (const id of chain) {
    widest = Math.max(widest, p.sizes.get(id)![0]);
    tallest = Math.max(tallest, p.sizes.get(id)![1]);
  }
  const perColumn = widest + 3 * LANE;
  const byWidth = Math.max(2, Math.floor(wrap.w / perColumn));
  for (let n = Math.min(Math.ceil(total / wrap.h), byWidth, Math.floor(chain.length / 2)); n >= 2; n--) {
    const target = total / n;
    // one item about as tall as a column (a big open module with a few small ones around it):
    // columns would only set the small ones aside, far from the flow, unless that item fits
    // the view's height while the whole does not (GPT-2's first view: its GPT2Model box, then
    // the head and the outputs beside it, rather than the outputs below the screen)
    if (tallest > DOMINANT * target && tallest > wrap.h) return null;
    const cols = cut(p, chain, n, target);
    // the columns as they are (a wide one beside narrow ones) must fit the width
    let w = 0;
    for (const col of cols) w += Math.max(...col.map((id) => p.sizes.get(id)![0])) + 3 * LANE;
    if (cols.length >= 2 && w <= wrap.w) return cols;
  }
  return null;
}

/** `chain` cut into at most `n` columns of about `target` height each. */
function cut(p: Placed, chain: readonly string[], n: number, target: number): string[][] {
  const cols: string[][] = [[]];
  let h = 0;
  for (const id of chain) {
    const ih = p.sizes.get(id)![1];
    const col = cols[cols.length - 1];
    if (col.length && h + ih / 2 > target && cols.length < n) {
      cols.push([id]);
      h = ih + LAYOUT_OPTS.ranksep;
    } else {
      col.push(id);
      h += ih + LAYOUT_OPTS.ranksep;
    }
  }
  return cols;
}

/** The chain of `p` laid out in `cols` (from splitColumns), with its ports if any. */
export function columnsLayout(p: Placed, cols: readonly string[][], portIn: boolean, portOut: boolean): RawLayout {
  const at = new Map<string, [number, number]>(); // centres
  const colOf = new Map<string, number>();
  const cx: number[] = [];
  const inX: number[] = [];
  const outX: number[] = [];
  const gutter: number[] = [];
  let x = 0;
  cols.forEach((col, k) => {
    let w = 0;
    for (const id of col) w = Math.max(w, p.sizes.get(id)![0]);
    if (portIn) {
      inX.push(x + PORT_SIZE / 2);
      x += LANE;
    }
    cx.push(x + w / 2);
    x += w;
    if (portOut) {
      x += LANE;
      outX.push(x);
    }
    if (k < cols.length - 1) {
      x += LANE;
      gutter.push(x);
      x += LANE;
    }
    for (const id of col) colOf.set(id, k);
  });
  const width = x + (portOut ? PORT_SIZE / 2 : 0);
  const inRun = PORT_SIZE / 2; // the in port's run, along the top
  const overTop = (portIn ? PORT_SIZE + GAP : 0) + GAP; // the runs into the next column
  const firstY = overTop + GAP;
  let bottom = 0;
  cols.forEach((col, k) => {
    let y = firstY;
    for (const id of col) {
      const h = p.sizes.get(id)![1];
      at.set(id, [cx[k], y + h / 2]);
      y += h + LAYOUT_OPTS.ranksep;
    }
    bottom = Math.max(bottom, y - LAYOUT_OPTS.ranksep);
  });
  const outRun = bottom + 2 * GAP; // the out port's run, along the bottom
  if (portIn) at.set(PORT_IN, [inX[0], inRun]);
  if (portOut) at.set(PORT_OUT, [outX[outX.length - 1], outRun + PORT_SIZE / 2]);
  const { top, low } = itemEnds(at, p.sizes);
  const edges = p.edges.map(([a, b]): number[] | null => {
    if (!at.has(a) || !at.has(b)) return null;
    if (a === PORT_IN) {
      const k = colOf.get(b)!;
      return [inX[0], inRun, inX[k], inRun, inX[k], top(b) - GAP, cx[k], top(b) - GAP, cx[k], top(b)];
    }
    if (b === PORT_OUT) {
      const k = colOf.get(a)!;
      const end = outX[outX.length - 1];
      return [cx[k], low(a), cx[k], low(a) + GAP, outX[k], low(a) + GAP, outX[k], outRun, end, outRun, end, top(b)];
    }
    const ka = colOf.get(a)!;
    const kb = colOf.get(b)!;
    if (ka === kb) return [cx[ka], low(a), cx[ka], top(b)];
    // into the next column: down, along to the gutter, up it, over the top, down into b
    const turn = low(a) + GAP;
    const g = gutter[ka];
    return [cx[ka], low(a), cx[ka], turn, g, turn, g, overTop, cx[kb], overTop, cx[kb], top(b)];
  });
  return { w: width, h: portOut ? outRun + PORT_SIZE : bottom, pos: centres(p.items, at), edges };
}

const LEAD = "⤒lead";

/**
 * How many items open the chain side by side (a model's inputs, all feeding its first
 * module): the leading items with nothing before them whose every edge goes to the item after
 * them, when the rest is a chain. 0 when there are fewer than two or the rest is no chain.
 */
export function leadRow(items: readonly { id: string }[], edges: readonly [string, string][]): number {
  const into = new Set(edges.map(([, b]) => b));
  let m = 0;
  while (m < items.length && !into.has(items[m].id)) m++;
  if (m < 2 || m >= items.length - 1) return 0;
  const lead = new Set(items.slice(0, m).map((it) => it.id));
  const first = items[m].id;
  const rest = items.slice(m);
  const pos = new Map(rest.map((it, i) => [it.id, i]));
  for (const [a, b] of edges) {
    if (lead.has(a)) {
      if (b !== first) return 0;
    } else if (lead.has(b) || pos.get(b) !== (pos.get(a) ?? -2) + 1) return 0;
  }
  return m;
}

/**
 * A chain opened by a lead row (leadRow: `m` items side by side) in columns for `wrap`, or
 * null where one column is best: the row is one item of the first column, above the item
 * it feeds; each of its edges runs straight down into that item (or turns to its middle).
 */
export function leadColumnsLayout(p: Placed, m: number, wrap: Wrap): RawLayout | null {
  const lead = p.items.slice(0, m);
  let rowW = -LANE;
  let rowH = 0;
  for (const it of lead) {
    const [w, h] = p.sizes.get(it.id)!;
    rowW += w + LANE;
    rowH = Math.max(rowH, h);
  }
  const first = p.items[m].id;
  const sizes = new Map(p.sizes);
  sizes.set(LEAD, [rowW, rowH]);
  const rest = p.edges.filter(([a]) => !lead.some((it) => it.id === a));
  const inner: Placed = { items: [{ id: LEAD }, ...p.items.slice(m)], sizes, edges: [[LEAD, first], ...rest] };
  const chain = inner.items.map((it) => it.id);
  const cols = splitColumns(inner, chain, wrap);
  if (!cols?.[0].includes(first)) return null;
  const raw = columnsLayout(inner, cols, false, false);
  const at = new Map<string, [number, number]>();
  inner.items.forEach((it, i) => at.set(it.id, [raw.pos[2 * i], raw.pos[2 * i + 1]]));
  const [lx, ly] = at.get(LEAD)!;
  let x = lx - rowW / 2;
  for (const it of lead) {
    const w = p.sizes.get(it.id)![0];
    at.set(it.id, [x + w / 2, ly]);
    x += w + LANE;
  }
  const [fx, fy] = at.get(first)!;
  const [fw, fh] = p.sizes.get(first)!;
  const innerRoute = new Map(inner.edges.map(([a, b], i) => [`${a}>${b}`, raw.edges[i]]));
  const edges = p.edges.map(([a, b]): number[] | null => {
    if (!at.has(a) || !at.has(b)) return null;
    if (b !== first || !lead.some((it) => it.id === a)) return innerRoute.get(`${a}>${b}`) ?? null;
    const [sx, sy] = at.get(a)!;
    const low = sy + p.sizes.get(a)![1] / 2;
    const top = fy - fh / 2;
    if (Math.abs(sx - fx) < fw / 2 - LANE) return [sx, low, sx, top];
    const turn = (low + top) / 2;
    return [sx, low, sx, turn, fx, turn, fx, top];
  });
  return { w: raw.w, h: raw.h, pos: centres(p.items, at), edges };
}
