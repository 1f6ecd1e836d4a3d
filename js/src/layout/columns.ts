// A tall chain in a wide view, wrapped into columns (the graph uses the width it has, issue 24):
// a box whose content is a chain (a stack of blocks, a long Sequential) and would be taller
// than the view holds at a readable zoom is cut into columns side by side, read top to bottom
// then left to right. The edge from one column to the next leaves the bottom of the column,
// runs up the gutter between the two and over the next column's top into its first item.
// With ports (edges from or to outside the box, chain.ts's lanes), each column has its own
// in lane on its left and out lane on its right; the in port's run is along the very top, the
// out port's along the very bottom, so no route crosses an item.
import { LAYOUT_OPTS, type Placed, PORT_IN, PORT_OUT, PORT_SIZE, type RawLayout } from "./chain";

const GAP = LAYOUT_OPTS.ranksep / 2;
const LANE = LAYOUT_OPTS.nodesep;

/** The most a box's content may take before its chain wraps, in graph units (see wrapFor). */
export interface Wrap {
  h: number;
  w: number;
}

// a view at least this much wider than tall is wide enough to put columns side by side
const WIDE = 1.3;
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
  const byWidth = Math.floor(wrap.w / perColumn);
  const n = Math.min(Math.ceil(total / wrap.h), byWidth, Math.floor(chain.length / 2));
  if (n < 2) return null;
  const target = total / n;
  // one item about as tall as a column (a big open module with a few small ones around it):
  // columns would only set the small ones aside, far from the flow
  if (tallest > DOMINANT * target) return null;
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
  return cols.length >= 2 ? cols : null;
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
  const top = (id: string): number => at.get(id)![1] - p.sizes.get(id)![1] / 2;
  const low = (id: string): number => at.get(id)![1] + p.sizes.get(id)![1] / 2;
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
  const pos = new Float64Array(p.items.length * 2);
  p.items.forEach((it, i) => {
    const [px, py] = at.get(it.id) ?? [0, 0];
    pos[2 * i] = px;
    pos[2 * i + 1] = py;
  });
  return { w: width, h: portOut ? outRun + PORT_SIZE : bottom, pos, edges };
}
