// A box with thousands of direct children (a model that runs 5,000 blocks in a row, a loop of
// 100,000 ops outside any module) is split into *chunks*: runs of consecutive children, in
// execution order, that show as one collapsed group and open on demand (what Model Explorer
// does for huge graphs: lay out only what is open). No layout job then holds more than
// CHUNK_LIMIT items, every op stays reachable (search opens its chunks like its modules), and
// edges are lifted to chunks as to any group. Past CHUNK_LIMIT chunks, chunks of chunks.
//
// A chunk is a group key "<box key>#<first>-<last>" (1-based positions among the box's
// children) whose address, the one the expanded set holds, is "<box address>#<first>-<last>":
// opening it opens that run in every pass of the box (lens_widget/widget/group_keys.py accepts it).
// Node ids never change, nor the nodes: only a view's list of each node's groups gets the chunk
// keys. Linear and iterative.
import type { NodeInfo } from "./protocol";

export const CHUNK_LIMIT = 200; // a box with more direct children than this is chunked
export const CHUNK_SIZE = 100; // children per chunk (evened out: 201 children -> 3 chunks of 67)
export const CHUNK_MARK = "#";

/** "#101-200": what follows a box's address in the address of its children 101..200 (1-based). */
export function chunkRange(lo: number, hi: number): string {
  return `${CHUNK_MARK}${lo}-${hi}`;
}

export interface Chunk {
  key: string;
  address: string;
  box: string; // key of the box it splits
  lo: number; // 1-based positions of its first and last child among the box's children
  hi: number;
  total: number; // children of the box
  first: string; // name of its first and last child (a node id or a group's address)
  last: string;
}

export interface Chunked {
  groups: (readonly string[])[]; // each node's groups, chunk keys included
  chunks: Map<string, Chunk>;
}

const ROOT = "";

/** The spans of the chunk levels of a box of `n` children, outermost first ([] when it fits). */
export function chunkSpans(n: number, limit = CHUNK_LIMIT, size = CHUNK_SIZE): number[] {
  if (n <= limit) return [];
  const bottom = Math.ceil(n / Math.ceil(n / size));
  const spans = [bottom];
  while (Math.ceil(n / spans[0]) > limit) spans.unshift(spans[0] * size);
  return spans;
}

/**
 * Each node's groups (`groups[i]` those of `nodes[i]`) with chunk keys wherever a box holds more
 * than `limit` children (`groups` itself when none does). `addressOf`: a group key's address.
 */
export function chunkNodes(
  nodes: readonly NodeInfo[],
  groups: readonly (readonly string[])[],
  addressOf: (key: string) => string,
  limit = CHUNK_LIMIT,
  size = CHUNK_SIZE,
): Chunked {
  // pass 1: each group's position among its box's children, each node's among its box's
  const count = new Map<string, number>([[ROOT, 0]]);
  const position = new Map<string, number>(); // group key -> position in its box
  const nodePos = new Int32Array(nodes.length);
  let prev: readonly string[] = [];
  for (let i = 0; i < nodes.length; i++) {
    const gs = groups[i];
    let box = ROOT;
    for (let d = 0; d < gs.length; d++) {
      const g = gs[d];
      // a group the previous node was in is counted already
      if (!(d < prev.length && prev[d] === g) && !count.has(g)) {
        const c = count.get(box)!;
        position.set(g, c);
        count.set(box, c + 1);
        count.set(g, 0);
      }
      box = g;
    }
    const c = count.get(box)!;
    nodePos[i] = c;
    count.set(box, c + 1);
    prev = gs;
  }
  const spans = new Map<string, number[]>();
  for (const [box, n] of count) if (n > limit) spans.set(box, chunkSpans(n, limit, size));
  const chunks = new Map<string, Chunk>();
  if (!spans.size) return { groups: groups as (readonly string[])[], chunks };

  // pass 2: the chunk keys in front of each child of a chunked box
  const firstPos = new Map<string, number>();
  const lastPos = new Map<string, number>();
  const boxAddress = (box: string): string => (box === ROOT ? "" : addressOf(box));
  const pathOf = (box: string, pos: number, name: string, out: string[]): string[] => {
    const levels = spans.get(box)!;
    const total = count.get(box)!;
    let prev = "";
    for (let l = 0; l < levels.length; l++) {
      const span = levels[l];
      const lo = Math.floor(pos / span) * span;
      const hi = Math.min(lo + span, total);
      const range = chunkRange(lo + 1, hi);
      const key = box + range;
      if (key === prev) continue; // the last chunk of a level may hold one chunk of the next
      prev = key;
      let c = chunks.get(key);
      if (!c) {
        c = { key, address: boxAddress(box) + range, box, lo: lo + 1, hi, total, first: name, last: name };
        chunks.set(key, c);
        firstPos.set(key, pos);
        lastPos.set(key, pos);
      } else if (pos > lastPos.get(key)!) {
        c.last = name;
        lastPos.set(key, pos);
      } else if (pos < firstPos.get(key)!) {
        c.first = name;
        firstPos.set(key, pos);
      }
      out.push(key);
    }
    return out;
  };
  // the chunk keys in front of a group: the same wherever it is met (asked once per group)
  const before = new Map<string, string[]>();
  const keysBefore = (box: string, g: string): string[] => {
    let keys = before.get(g);
    if (!keys) before.set(g, (keys = pathOf(box, position.get(g)!, addressOf(g), [])));
    return keys;
  };
  const out = new Array<readonly string[]>(nodes.length);
  // nodes of one box whose box is not chunked share the groups of the one before them
  let prevIn: readonly string[] = [];
  let prevOut: string[] | null = null;
  for (let i = 0; i < nodes.length; i++) {
    const gs = groups[i];
    const own = gs.length ? gs[gs.length - 1] : ROOT;
    if (prevOut && !spans.has(own) && (gs === prevIn || sameList(gs, prevIn))) {
      out[i] = prevOut;
      continue;
    }
    let touched = spans.has(ROOT);
    for (let d = 0; d < gs.length && !touched; d++) touched = spans.has(gs[d]);
    prevOut = null;
    if (!touched) {
      out[i] = gs;
      continue;
    }
    const path: string[] = [];
    let box = ROOT;
    for (let d = 0; d < gs.length; d++) {
      const g = gs[d];
      if (spans.has(box)) for (const k of keysBefore(box, g)) path.push(k);
      path.push(g);
      box = g;
    }
    if (spans.has(box)) pathOf(box, nodePos[i], nodes[i].id, path);
    else {
      prevIn = gs;
      prevOut = path;
    }
    out[i] = path;
  }
  return { groups: out, chunks };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = a.length - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}
