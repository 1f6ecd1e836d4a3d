// Text shown on nodes and collapsed modules, and the box sizes derived from it.
import { CHUNK_MARK } from "../graph/chunks";
import type { NodeInfo, ViewName } from "../graph/protocol";
import type { GroupNode } from "../graph/tree";
import { collectiveLines } from "../ranks/collectives";

export const FONT_FAMILY = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', monospace";
export const FONT_PX = 11;
export const SMALL_PX = 10;
export const BOX_PAD = 12; // padding inside an expanded module box
export const BOX_HEADER = 22; // header band of an expanded module box
export const NODE_H = 34;
export const SOURCE_H = 26; // params, buffers, consts
export const GROUP_H = 50;
const MAX_CHARS = 34;

export interface Metrics {
  charWidth: number; // at FONT_PX, monospace
}

export const DEFAULT_METRICS: Metrics = { charWidth: 6.7 };

/** The canvas's real character width, so boxes fit their text; null where it cannot be measured. */
export function measureMetrics(canvas: HTMLCanvasElement): Metrics | null {
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.font = `700 ${FONT_PX}px ${FONT_FAMILY}`;
  const w = ctx.measureText("M".repeat(40)).width / 40;
  return w > 2 ? { charWidth: w } : null;
}

export function shapeText(shape: number[] | null): string {
  if (!shape) return "";
  return shape.length === 0 ? "scalar" : shape.join("×");
}

export function clip(s: string, n: number = MAX_CHARS): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** A module address too long for its box keeps its end, the part that tells siblings apart. */
export function clipStart(s: string, n: number = MAX_CHARS): string {
  return s.length > n ? `…${s.slice(s.length - n + 1)}` : s;
}

export function nodeLines(n: NodeInfo): [string, string] {
  if (n.collective) {
    const [l1, l2] = collectiveLines(n, n.collective, shapeText(n.shape));
    return [clip(l1), clip(l2)];
  }
  const passes = n.nPasses > 1 ? ` ×${n.nPasses}` : "";
  // rolled passes of different shapes: each of them, never one shape for all
  const shape = n.passShapes ? n.passShapes.map(shapeText).join(" | ") : shapeText(n.shape);
  return [clip(n.func + passes), clip(shape)];
}

export function groupLines(g: GroupNode, view: ViewName): [string, string, string] {
  const shape = shapeText(g.outShape);
  const ops = `${g.nOps} op${g.nOps === 1 ? "" : "s"}${shape ? ` → ${shape}` : ""}`;
  if (g.kind === "stack")
    return [clip(`${g.className} ×${g.members.length}`), clipStart(stackTitle(g.members)), clip(ops)];
  if (g.chunk) {
    const c = g.chunk;
    const box = c.address.slice(0, c.address.lastIndexOf(CHUNK_MARK));
    const where = box === "" ? "the model" : clipStart(box, 20);
    return [
      clip(c.first === c.last ? c.first : stackTitle([c.first, c.last])),
      clip(`${c.lo}–${c.hi} of ${c.total} in ${where}`),
      clip(ops),
    ];
  }
  if (g.kind === "outputs")
    return [clip(`${g.className} ×${g.members.length}`), clipStart(g.address), `${g.members.length} outputs`];
  const passes =
    view === "rolled" && g.nPasses > 1 ? ` ×${g.nPasses}` : g.pass && g.nPasses > 1 ? ` (${g.pass}/${g.nPasses})` : "";
  return [clip(g.className + passes), clipStart(g.address), clip(ops)];
}

/** "transformer.h.0…23" for blocks h.0 to h.23; "a … b" when their names differ more. */
export function stackTitle(members: string[]): string {
  const first = members[0] ?? "";
  const last = members[members.length - 1] ?? "";
  const cut = first.lastIndexOf(".") + 1;
  return cut > 0 && last.startsWith(first.slice(0, cut)) ? `${first}…${last.slice(cut)}` : `${first} … ${last}`;
}

function textWidth(lines: string[], m: Metrics): number {
  let w = 0;
  for (const l of lines) w = Math.max(w, l.length * m.charWidth);
  return w;
}

export function nodeSize(n: NodeInfo, m: Metrics): [number, number] {
  const small = n.kind === "param" || n.kind === "buffer" || n.kind === "const";
  const w = Math.max(small ? 50 : 64, textWidth(nodeLines(n), m) + (small ? 14 : 22));
  return [Math.round(w), small ? SOURCE_H : NODE_H];
}

export function groupSize(g: GroupNode, view: ViewName, m: Metrics): [number, number] {
  return [Math.round(Math.max(90, textWidth(groupLines(g, view), m) + 28)), GROUP_H];
}
