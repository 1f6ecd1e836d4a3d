// Lays out one module box's direct children with dagre (never the whole nested graph:
// dagre's compound mode overflows the stack past ~2000 nodes). Runs in the worker.
// Edges that enter or leave the box must reach their inner item without crossing others:
// straight down from the box's top when nothing is above the item, else through a *port*,
// a point node that dagre places above (in) or below (out) everything and routes from.
import dagre from "@dagrejs/dagre";
import { edgeKey } from "../graph/tree";
import {
  chainLayout,
  isChain,
  LAYOUT_OPTS,
  lanesLayout,
  type Placed,
  PORT_IN,
  PORT_OUT,
  PORT_SIZE,
  type RawLayout,
} from "./chain";
import { columnsLayout, leadColumnsLayout, leadRow, splitColumns, type Wrap } from "./columns";
import { BOX_HEADER, BOX_PAD } from "./labels";
import { type Box, bandRoute, rankBands, reversePoints } from "./routes";

export interface LayoutItem {
  id: string;
  w: number;
  h: number;
  ref?: string; // cache key of a job earlier in the same batch: its box size replaces w/h
}

export interface LayoutJob {
  key: string; // cache key
  items: LayoutItem[];
  edges: [string, string][];
  minW: number; // the header text must fit
  // Items with edges from outside the box (in) and to outside it (out).
  ports?: { in: string[]; out: string[] };
  wrap?: Wrap; // a chain taller than this goes in columns side by side (columns.ts)
}

export interface GroupLayout {
  key: string;
  w: number; // content size, padding and header excluded
  h: number;
  pos: Record<string, [number, number]>; // item centre relative to the content's top-left (ports too)
  // edgeKey(src, tgt) -> flat x,y list (content coordinates), from src's bottom centre to
  // tgt's top centre; with ports also edgeKey(PORT_IN, item) and edgeKey(item, PORT_OUT)
  edgePoints: Record<string, number[]>;
  portIn: boolean; // edges from outside come through PORT_IN (else straight down to their item)
  portOut: boolean;
}

export { LAYOUT_OPTS, PORT_IN, PORT_OUT };

export function boxSize(l: GroupLayout): [number, number] {
  return [l.w + 2 * BOX_PAD, l.h + 2 * BOX_PAD + BOX_HEADER];
}

function resolveSizes(job: LayoutJob, done: ReadonlyMap<string, GroupLayout>): Map<string, [number, number]> {
  const sizes = new Map<string, [number, number]>();
  for (const it of job.items) {
    if (it.ref !== undefined) {
      const child = done.get(it.ref);
      if (!child) throw new Error(`layout: child ${it.ref} missing for ${job.key}`);
      sizes.set(it.id, boxSize(child));
    } else sizes.set(it.id, [it.w, it.h]);
  }
  return sizes;
}

// Repeated blocks (12 transformer layers, 50 ResNet bottlenecks) have boxes of the same
// shape: lay each shape out once and reuse it. Bounded so a long session cannot grow it forever.
const MEMO_MAX = 4000;
const memo = new Map<string, RawLayout>();

function shapeKey(p: Placed): string {
  const index = new Map<string, number>();
  const parts: string[] = [];
  p.items.forEach((it, i) => {
    index.set(it.id, i);
    const [w, h] = p.sizes.get(it.id)!;
    parts.push(`${w},${h}`);
  });
  parts.push("|");
  for (const [a, b] of p.edges) parts.push(`${index.get(a) ?? -1}>${index.get(b) ?? -1}`);
  return parts.join(" ");
}

function dagreLayout(p: Placed): RawLayout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ ...LAYOUT_OPTS });
  g.setDefaultEdgeLabel(() => ({}));
  for (const it of p.items) {
    const [w, h] = p.sizes.get(it.id)!;
    g.setNode(it.id, { width: w, height: h });
  }
  for (const [a, b] of p.edges) if (p.sizes.has(a) && p.sizes.has(b)) g.setEdge(a, b);
  dagre.layout(g);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const boxes = new Map<string, Box>();
  for (const it of p.items) {
    const n = g.node(it.id);
    const [w, h] = p.sizes.get(it.id)!;
    const b = { x: n.x ?? 0, y: n.y ?? 0, w, h };
    boxes.set(it.id, b);
    minX = Math.min(minX, b.x - w / 2);
    minY = Math.min(minY, b.y - h / 2);
    maxX = Math.max(maxX, b.x + w / 2);
    maxY = Math.max(maxY, b.y + h / 2);
  }
  if (p.items.length === 0) minX = minY = maxX = maxY = 0;
  // routes may pass beside every node: the box must hold them too
  for (const [a, b] of p.edges)
    for (const q of (p.sizes.has(a) && p.sizes.has(b) ? g.edge(a, b)?.points : undefined) ?? []) {
      minX = Math.min(minX, q.x);
      maxX = Math.max(maxX, q.x);
    }
  const pos = new Float64Array(p.items.length * 2);
  p.items.forEach((it, i) => {
    const b = boxes.get(it.id)!;
    b.x -= minX;
    b.y -= minY;
    pos[2 * i] = b.x;
    pos[2 * i + 1] = b.y;
  });
  const bands = rankBands(boxes.values());
  const edges = p.edges.map(([a, b]) => {
    const e = p.sizes.has(a) && p.sizes.has(b) ? g.edge(a, b) : undefined;
    if (!e?.points) return null;
    const flat: number[] = [];
    for (const q of e.points) flat.push(q.x - minX, q.y - minY);
    return bandRoute(flat, boxes.get(a)!, boxes.get(b)!, bands);
  });
  return { w: maxX - minX, h: maxY - minY, pos, edges };
}

/** The job with its port nodes: each port joined to its items, and to every item with nothing
 * before it (in) or after it (out) in the box, so it lies above or below all of them. */
function withPorts(job: LayoutJob, sizes: Map<string, [number, number]>, portIn: boolean, portOut: boolean): Placed {
  if (!portIn && !portOut) return { items: job.items, sizes, edges: job.edges };
  const items = [...job.items];
  const edges = [...job.edges];
  const all = new Map(sizes);
  const hasIn = new Set(job.edges.map(([, b]) => b));
  const hasOut = new Set(job.edges.map(([a]) => a));
  if (portIn) {
    items.unshift({ id: PORT_IN, w: PORT_SIZE, h: PORT_SIZE });
    all.set(PORT_IN, [PORT_SIZE, PORT_SIZE]);
    const to = new Set([...(job.ports?.in ?? []), ...job.items.filter((it) => !hasIn.has(it.id)).map((it) => it.id)]);
    for (const t of to) edges.push([PORT_IN, t]);
  }
  if (portOut) {
    items.push({ id: PORT_OUT, w: PORT_SIZE, h: PORT_SIZE });
    all.set(PORT_OUT, [PORT_SIZE, PORT_SIZE]);
    const from = new Set([
      ...(job.ports?.out ?? []),
      ...job.items.filter((it) => !hasOut.has(it.id)).map((it) => it.id),
    ]);
    for (const f of from) edges.push([f, PORT_OUT]);
  }
  return { items, sizes: all, edges };
}

// A box of many unconnected items (a group of outputs) would be one long row: stack them in
// columns instead, held in place by edges that only the layout sees.
const GRID_MIN = 9;

function inColumns(job: LayoutJob): [string, string][] {
  const n = job.items.length;
  if (job.edges.length > 0 || n < GRID_MIN) return [];
  const rows = Math.ceil(n / Math.max(1, Math.round(Math.sqrt(n / 2))));
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < n; i++) if ((i + 1) % rows !== 0) out.push([job.items[i].id, job.items[i + 1].id]);
  return out;
}

/** An edge to an item that comes before its source in the box (a loop back in the rolled view). */
export function isBack(order: ReadonlyMap<string, number>, a: string, b: string): boolean {
  return (order.get(b) ?? 0) <= (order.get(a) ?? 0);
}

function place(job: LayoutJob, sizes: Map<string, [number, number]>, portIn: boolean, portOut: boolean): GroupLayout {
  // dagre gets every edge pointing down the item order (a loop back reversed), so no cycle is
  // left for it to break its own way; a loop back is drawn along its reversed route
  const order = new Map(job.items.map((it, i) => [it.id, i]));
  const back = job.edges.filter(([a, b]) => isBack(order, a, b));
  const forward = job.edges.map(([a, b]): [string, string] => (isBack(order, a, b) ? [b, a] : [a, b]));
  const columns = inColumns(job);
  const p = withPorts({ ...job, edges: columns.length ? columns : forward }, sizes, portIn, portOut);
  // a tall chain in a wide view: columns side by side (columns.ts)
  const chain = job.wrap && !columns.length && !back.length && isChain(job.items, forward);
  const cols =
    chain && job.wrap
      ? splitColumns(
          p,
          job.items.map((it) => it.id),
          job.wrap,
        )
      : null;
  // the same opened by a row of inputs side by side (a model's top level: its inputs, its
  // main module, its head, its outputs)
  const lead =
    job.wrap && !cols && !columns.length && !back.length && !portIn && !portOut ? leadRow(job.items, forward) : 0;
  const led = lead && job.wrap ? leadColumnsLayout(p, lead, job.wrap) : null;
  let raw: RawLayout;
  if (led) raw = led;
  else if (cols) raw = columnsLayout(p, cols, portIn, portOut);
  else if (isChain(p.items, p.edges)) raw = chainLayout(p);
  else if (!columns.length && (portIn || portOut) && isChain(job.items, forward)) raw = lanesLayout(p, portIn, portOut);
  else {
    const key = shapeKey(p);
    const known = memo.get(key);
    raw = known ?? dagreLayout(p);
    if (!known) {
      if (memo.size >= MEMO_MAX) memo.clear();
      memo.set(key, raw);
    }
  }
  // centre narrow content under a wide header, and keep where edges come in (the in port, or
  // the items entered straight down) clear of the title, which covers the left half of
  // minW (scenePlan.ts's headerWidth): an edge then enters with no jog around the title
  const entries = portIn ? [PORT_IN] : (job.ports?.in ?? []);
  let firstEntry = Infinity;
  for (const id of entries) {
    const i = p.items.findIndex((it) => it.id === id);
    if (i >= 0) firstEntry = Math.min(firstEntry, raw.pos[2 * i]);
  }
  const clearOfTitle = Number.isFinite(firstEntry) ? job.minW / 2 - firstEntry : 0;
  const dx = Math.max(0, (job.minW - raw.w) / 2, clearOfTitle);
  const pos: Record<string, [number, number]> = {};
  p.items.forEach((it, i) => (pos[it.id] = [raw.pos[2 * i] + dx, raw.pos[2 * i + 1]]));
  const edgePoints: Record<string, number[]> = {};
  p.edges.forEach(([a, b], i) => {
    const r = raw.edges[i];
    if (!r) return;
    edgePoints[edgeKey(a, b)] = dx === 0 ? r.slice() : r.map((v, j) => (j % 2 === 0 ? v + dx : v));
  });
  for (const [a, b] of back) {
    const r = edgePoints[edgeKey(b, a)];
    if (r) edgePoints[edgeKey(a, b)] = reversePoints(r);
  }
  return { key: job.key, w: Math.max(raw.w + dx, job.minW), h: raw.h, pos, edgePoints, portIn, portOut };
}

/** True when a vertical line from each item's centre up (or down) to the box's edge meets no other item. */
function clear(
  l: GroupLayout,
  job: LayoutJob,
  sizes: Map<string, [number, number]>,
  ids: string[],
  up: boolean,
): boolean {
  for (const id of ids) {
    const [x, y] = l.pos[id];
    const h = sizes.get(id)![1];
    for (const other of job.items) {
      if (other.id === id) continue;
      const [ox, oy] = l.pos[other.id];
      const [ow, oh] = sizes.get(other.id)!;
      const across = ox - ow / 2 < x && x < ox + ow / 2;
      if (across && (up ? oy - oh / 2 < y - h / 2 : oy + oh / 2 > y + h / 2)) return false;
    }
  }
  return true;
}

export function layoutJob(job: LayoutJob, done: ReadonlyMap<string, GroupLayout>): GroupLayout {
  const sizes = resolveSizes(job, done);
  const ins = job.ports?.in ?? [];
  const outs = job.ports?.out ?? [];
  let portIn = false;
  let portOut = false;
  let l = place(job, sizes, false, false);
  // a port moves things: check the other side again after adding one
  for (let i = 0; i < 2; i++) {
    const needIn: boolean = portIn || (ins.length > 0 && !clear(l, job, sizes, ins, true));
    const needOut: boolean = portOut || (outs.length > 0 && !clear(l, job, sizes, outs, false));
    if (needIn === portIn && needOut === portOut) break;
    portIn = needIn;
    portOut = needOut;
    l = place(job, sizes, portIn, portOut);
  }
  return l;
}

/** Jobs come children first; each may refer to results of earlier ones. */
export function runJobs(jobs: LayoutJob[], known: ReadonlyMap<string, GroupLayout> = new Map()): GroupLayout[] {
  const done = new Map(known);
  const out: GroupLayout[] = [];
  for (const j of jobs) {
    const l = layoutJob(j, done);
    done.set(j.key, l);
    out.push(l);
  }
  return out;
}
