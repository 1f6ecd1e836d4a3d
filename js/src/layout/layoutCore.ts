// Lays out one module box's direct children with dagre (never the whole nested graph:
// dagre's compound mode overflows the stack past ~2000 nodes). Runs in the worker.
import dagre from "@dagrejs/dagre";
import { edgeKey } from "../model/tree";
import { BOX_HEADER, BOX_PAD } from "./labels";

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
}

export interface GroupLayout {
  key: string;
  w: number; // content size, padding and header excluded
  h: number;
  pos: Record<string, [number, number]>; // item centre relative to the content's top-left
  edgePoints: Record<string, number[]>; // edgeKey(src, tgt) -> flat x,y list (content coordinates)
}

export const LAYOUT_OPTS = { rankdir: "TB", nodesep: 22, ranksep: 34, edgesep: 8, marginx: 0, marginy: 0 } as const;

export function boxSize(l: GroupLayout): [number, number] {
  return [l.w + 2 * BOX_PAD, l.h + 2 * BOX_PAD + BOX_HEADER];
}

/** True when every edge joins an item to the next one: a straight column, no dagre needed. */
export function isChain(job: LayoutJob): boolean {
  const pos = new Map<string, number>();
  job.items.forEach((it, i) => pos.set(it.id, i));
  for (const [a, b] of job.edges) {
    const ia = pos.get(a);
    const ib = pos.get(b);
    if (ia === undefined || ib === undefined) continue;
    if (ib !== ia + 1) return false;
  }
  return true;
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

// Most module boxes (Linear, LayerNorm, an MLP) are a single op or a chain: stacking them
// is what dagre would do, at a fraction of its fixed cost per call.
function chainLayout(job: LayoutJob, sizes: Map<string, [number, number]>): GroupLayout {
  let maxW = 0;
  for (const [w] of sizes.values()) maxW = Math.max(maxW, w);
  const width = Math.max(maxW, job.minW);
  const cx = width / 2;
  const pos: Record<string, [number, number]> = {};
  let y = 0;
  for (const it of job.items) {
    const [, h] = sizes.get(it.id)!;
    pos[it.id] = [cx, y + h / 2];
    y += h + LAYOUT_OPTS.ranksep;
  }
  const edgePoints: Record<string, number[]> = {};
  for (const [a, b] of job.edges) {
    if (!pos[a] || !pos[b]) continue;
    edgePoints[edgeKey(a, b)] = [cx, pos[a][1] + sizes.get(a)![1] / 2, cx, pos[b][1] - sizes.get(b)![1] / 2];
  }
  return { key: job.key, w: width, h: job.items.length ? y - LAYOUT_OPTS.ranksep : 0, pos, edgePoints };
}

/** dagre's answer for one box, by item and edge index, top-left at (0, 0). */
interface RawLayout {
  w: number;
  h: number;
  pos: Float64Array; // x0, y0, x1, y1, ... item centres
  edges: (number[] | null)[]; // per job edge: flat route
}

// Repeated blocks (12 transformer layers, 50 ResNet bottlenecks) have boxes of the same
// shape: lay each shape out once and reuse it. Bounded so a long session cannot grow it forever.
const MEMO_MAX = 4000;
const memo = new Map<string, RawLayout>();

function shapeKey(job: LayoutJob, sizes: Map<string, [number, number]>): string {
  const index = new Map<string, number>();
  const parts: string[] = [];
  job.items.forEach((it, i) => {
    index.set(it.id, i);
    const [w, h] = sizes.get(it.id)!;
    parts.push(`${w},${h}`);
  });
  parts.push("|");
  for (const [a, b] of job.edges) parts.push(`${index.get(a) ?? -1}>${index.get(b) ?? -1}`);
  return parts.join(" ");
}

function dagreLayout(job: LayoutJob, sizes: Map<string, [number, number]>): RawLayout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ ...LAYOUT_OPTS });
  g.setDefaultEdgeLabel(() => ({}));
  for (const it of job.items) {
    const [w, h] = sizes.get(it.id)!;
    g.setNode(it.id, { width: w, height: h });
  }
  for (const [a, b] of job.edges) if (sizes.has(a) && sizes.has(b)) g.setEdge(a, b);
  dagre.layout(g);
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const pos = new Float64Array(job.items.length * 2);
  job.items.forEach((it, i) => {
    const n = g.node(it.id);
    const [w, h] = sizes.get(it.id)!;
    const x = n.x ?? 0;
    const y = n.y ?? 0;
    pos[2 * i] = x;
    pos[2 * i + 1] = y;
    minX = Math.min(minX, x - w / 2);
    minY = Math.min(minY, y - h / 2);
    maxX = Math.max(maxX, x + w / 2);
    maxY = Math.max(maxY, y + h / 2);
  });
  if (job.items.length === 0) minX = minY = maxX = maxY = 0;
  for (let i = 0; i < pos.length; i += 2) {
    pos[i] -= minX;
    pos[i + 1] -= minY;
  }
  const edges = job.edges.map(([a, b]) => {
    const e = sizes.has(a) && sizes.has(b) ? g.edge(a, b) : undefined;
    if (!e?.points) return null;
    const flat: number[] = [];
    for (const p of e.points) flat.push(p.x - minX, p.y - minY);
    return flat;
  });
  return { w: maxX - minX, h: maxY - minY, pos, edges };
}

export function layoutJob(job: LayoutJob, done: ReadonlyMap<string, GroupLayout>): GroupLayout {
  const sizes = resolveSizes(job, done);
  if (isChain(job)) return chainLayout(job, sizes);
  const key = shapeKey(job, sizes);
  let raw = memo.get(key);
  if (!raw) {
    raw = dagreLayout(job, sizes);
    if (memo.size >= MEMO_MAX) memo.clear();
    memo.set(key, raw);
  }
  // centre narrow content under a wide header
  const dx = Math.max(0, (job.minW - raw.w) / 2);
  const pos: Record<string, [number, number]> = {};
  job.items.forEach((it, i) => (pos[it.id] = [raw.pos[2 * i] + dx, raw.pos[2 * i + 1]]));
  const edgePoints: Record<string, number[]> = {};
  job.edges.forEach(([a, b], i) => {
    const r = raw.edges[i];
    if (!r) return;
    edgePoints[edgeKey(a, b)] = dx === 0 ? r.slice() : r.map((v, j) => (j % 2 === 0 ? v + dx : v));
  });
  return { key: job.key, w: Math.max(raw.w, job.minW), h: raw.h, pos, edgePoints };
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
