// Text shown on nodes and collapsed modules, and the box sizes derived from it.
import { CHUNK_MARK } from "../graph/chunks";
import { outputGroupTitle } from "../graph/folds";
import { outputsShapeText } from "../graph/moduleOutputs";
import type { NodeInfo, ViewName } from "../graph/protocol";
import type { GroupNode } from "../graph/tree";
import { unwrapped } from "../graph/wrapperPrefix";
import { fmtCount } from "../panel/format";
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

/** A module address too long for its box keeps its start (the part of the model) and its
 * end (what tells siblings apart), cut in the middle at a dot where one is near:
 * "encoder.layer.0…self.value". A numbered block and what follows it ("layers.0.self_attn")
 * is kept whole where it fits: the cut never takes the number that tells blocks apart. */
export function clipMiddle(s: string, n: number = MAX_CHARS): string {
  const cut = elideMiddle(s, n);
  const tail = distinguishingTail(s);
  if (cut === s || cut.endsWith(`…${tail}`) || cut.endsWith(`.${tail}`) || tail.length + 1 > n) return cut;
  const room = n - 1 - tail.length; // what the head may take beside the ellipsis and the tail
  const head = room >= 4 ? s.slice(0, room) : "";
  const dot = head.lastIndexOf(".");
  return `${dot >= room / 2 ? head.slice(0, dot) : head}…${tail}`;
}

/** What tells a module from its cousins: from its numbered block's name on
 * ("layers.0.self_attn"), else its own name. */
function distinguishingTail(address: string): string {
  const parts = address.split(".");
  for (let k = parts.length - 1; k >= 1; k--) if (/^\d+$/.test(parts[k])) return parts.slice(k - 1).join(".");
  return parts[parts.length - 1];
}

/** `s` in at most `n` characters, an ellipsis in the middle; a cut lands on a dot (or a space)
 * near it, so whole names are kept on both sides where they fit. */
export function elideMiddle(s: string, n: number): string {
  if (s.length <= n) return s;
  if (n <= 1) return "…".slice(0, Math.max(0, n));
  const keep = n - 1;
  const isSep = (c: string | undefined): boolean => c === "." || c === " ";
  // the head ends after a separator and the tail starts after one where that costs little
  let best = { h: Math.ceil(keep / 2), t: Math.floor(keep / 2), score: -1 };
  for (let h = Math.ceil(keep * 0.3); h <= Math.floor(keep * 0.7); h++) {
    let t = keep - h;
    for (let k = t; k >= Math.ceil((keep - h) * 0.6); k--)
      if (isSep(s[s.length - k - 1])) {
        t = k;
        break;
      }
    const nice = (isSep(s[h - 1]) ? 2 : 0) + (isSep(s[s.length - t - 1]) ? 2 : 0);
    const score = nice + (h + t) / keep - Math.abs(h - t) / (4 * keep);
    if (score > best.score) best = { h, t, score };
  }
  const head = s.slice(0, isSep(s[best.h - 1]) ? best.h - 1 : best.h); // "a.b…c", not "a.b.…c"
  return `${head}…${s.slice(s.length - best.t)}`;
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
  const shape = g.outputs ? outputsShapeText(g.outputs) : shapeText(g.outShape);
  const shown = (address: string): string => unwrapped(address, g.prefix);
  const ops = `${fmtCount(g.nOps)} op${g.nOps === 1 ? "" : "s"}${shape ? ` → ${shape}` : ""}`;
  if (g.kind === "stack")
    return [clip(`${g.className} ×${g.members.length}`), clipMiddle(stackTitle(g.members.map(shown))), clip(ops)];
  if (g.chunk) {
    const c = g.chunk;
    const box = c.address.slice(0, c.address.lastIndexOf(CHUNK_MARK));
    const where = box === "" ? "the model" : clipMiddle(shown(box), 20);
    return [
      clip(c.first === c.last ? c.first : stackTitle([c.first, c.last])),
      clip(`${c.lo}–${c.hi} of ${c.total} in ${where}`),
      clip(ops),
    ];
  }
  if (g.kind === "outputs")
    return [clip(outputGroupTitle(g)), clipMiddle(shown(g.address)), `${g.members.length} outputs`];
  const passes =
    view === "rolled" && g.nPasses > 1 ? ` ×${g.nPasses}` : g.pass && g.nPasses > 1 ? ` (${g.pass}/${g.nPasses})` : "";
  return [clip(g.className + passes), clipMiddle(shown(g.address)), clip(ops)];
}

/** The title of an open module's box: its class and where it is, short (the boxes around it
 * say the rest; hovering the title shows the whole address): "GPT2Attention  attn",
 * "GPT2Block  h.3", a stack's or chunk's lines as folded. */
export function headerLines(g: GroupNode, view: ViewName): [string, string] {
  const [cls, where] = groupLines(g, view);
  if (g.kind === "stack" || g.kind === "outputs" || g.chunk || !g.address)
    return [cls, clipMiddle(where, HEADER_CHARS)];
  return [cls, shortAddress(g.address)];
}

const HEADER_CHARS = 24;

/** A module's own name in its address: "attn"; a numbered block with its list: "h.3". */
export function shortAddress(address: string): string {
  const parts = address.split(".");
  const n = parts.length;
  const own = n >= 2 && /^\d+$/.test(parts[n - 1]) ? `${parts[n - 2]}.${parts[n - 1]}` : parts[n - 1];
  return clipMiddle(own, HEADER_CHARS);
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

/** The tag in a function box's corner (a plain function of the model's code, not a module). */
export const FN_TAG = "fn";
export const FN_TAG_X = 6; // its left, from the box's left (drawNodes.ts draws it there)

/** The px a closed function box keeps free on each side of its centred lines for the "fn"
 * tag in its corner: the title never runs under it. */
export function fnTagRoom(m: Metrics): number {
  return FN_TAG_X + (FN_TAG.length * m.charWidth * SMALL_PX) / FONT_PX + 6;
}

export function groupSize(g: GroupNode, view: ViewName, m: Metrics): [number, number] {
  const text = textWidth(groupLines(g, view), m);
  const sides = g.kind === "function" ? 2 * fnTagRoom(m) : 28;
  return [Math.round(Math.max(90, text + sides)), GROUP_H];
}
