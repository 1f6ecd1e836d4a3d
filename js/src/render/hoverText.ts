// The whole text of what the pointer is over (the canvas's tooltip): the names drawn on the
// graph are cut to fit their box (labels.ts), the tooltip never is.
import { outputGroupTitle } from "../graph/folds";
import { outputsNamedText } from "../graph/moduleOutputs";
import type { GraphModel } from "../graph/tree";
import { GROUP_PREFIX } from "../graph/visibility";
import { shapeText, stackTitle } from "../layout/labels";
import { fmtCount } from "../panel/format";
import type { Hit } from "./hitTest";

/** "GPT2Attention transformer.h.0.attn · 24 ops → 1×16×64 (click to open)"; an op's name,
 * id and shape. Empty over nothing. */
export function hoverText(model: GraphModel | null, hit: Hit): string {
  if (!hit || !model) return "";
  if (hit.type === "header") return `${groupText(model, hit.box)} (click to collapse)`;
  if (hit.id.startsWith(GROUP_PREFIX)) return `${groupText(model, hit.id.slice(GROUP_PREFIX.length))} (click to open)`;
  const n = model.nodes.get(hit.id);
  if (!n) return hit.id;
  const shape = shapeText(n.shape);
  const passes = n.nPasses > 1 ? ` ×${n.nPasses}` : "";
  return `${n.func}${passes} · ${n.id}${shape ? ` → ${shape}` : ""}${n.module ? ` · in ${n.module}` : ""}`;
}

function groupText(model: GraphModel, key: string): string {
  const g = model.groups.get(key);
  if (!g) return key;
  const where = g.kind === "stack" ? stackTitle(g.members) : g.address;
  const cls =
    g.kind === "outputs"
      ? outputGroupTitle(g)
      : g.kind === "stack"
        ? `${g.className} ×${g.members.length}`
        : g.className;
  const shape = g.outputs ? outputsNamedText(g.outputs) : shapeText(g.outShape);
  const ops = `${fmtCount(g.nOps)} op${g.nOps === 1 ? "" : "s"}${shape ? ` → ${shape}` : ""}`;
  const name = [cls, where].filter(Boolean).join(" ");
  return `${name} · ${ops}`;
}
