// Lays out one module box's direct children with dagre (never the whole nested graph:
// dagre's compound mode overflows the stack past ~2000 nodes). Runs in the worker.
import dagre from "@dagrejs/dagre";
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
  edgePoints: Record<string, number[]>; // "src\ntgt" -> flat x,y list (content coordinates)
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
    edgePoints[a + "\n" + b] = [cx, pos[a][1] + sizes.get(a)![1] / 2, cx, pos[b][1] - sizes.get(b)![1] / 2];
  }
  return { key: job.key, w: width, h: job.items.length ? y - LAYOUT_OPTS.ranksep : 0, pos, edgePoints };
}

export function layoutJob(job: LayoutJob, done: ReadonlyMap<string, GroupLayout>): GroupLayout {
  const sizes = resolveSizes(job, done);
  if (isChain(job)) return chainLayout(job, sizes);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ ...LAYOUT_OPTS });
  g.setDefaultEdgeLabel(() => ({}));
  for (const it of job.items) {
    const [w, h] = sizes.get(it.id)!;
    g.setNode(it.id, { width: w, height: h });
  }
  for (const [a, b] of job.edges) if (sizes.has(a) && sizes.has(b)) g.setEdge(a, b);
  dagre.layout(g);
  const pos: Record<string, [number, number]> = {};
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const it of job.items) {
    const n = g.node(it.id);
    const [w, h] = sizes.get(it.id)!;
    const x = n.x ?? 0;
    const y = n.y ?? 0;
    pos[it.id] = [x, y];
    minX = Math.min(minX, x - w / 2);
    minY = Math.min(minY, y - h / 2);
    maxX = Math.max(maxX, x + w / 2);
    maxY = Math.max(maxY, y + h / 2);
  }
  if (job.items.length === 0) minX = minY = maxX = maxY = 0;
  let w = maxX - minX;
  // centre narrow content under a wide header
  const dx = -minX + Math.max(0, (job.minW - w) / 2);
  w = Math.max(w, job.minW);
  for (const id in pos) pos[id] = [pos[id][0] + dx, pos[id][1] - minY];
  const edgePoints: Record<string, number[]> = {};
  for (const e of g.edges()) {
    const pts = g.edge(e).points ?? [];
    const flat: number[] = [];
    for (const p of pts) flat.push(p.x + dx, p.y - minY);
    edgePoints[e.v + "\n" + e.w] = flat;
  }
  return { key: job.key, w, h: maxY - minY, pos, edgePoints };
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
