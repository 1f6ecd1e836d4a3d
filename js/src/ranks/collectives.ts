// Collective ops (NodeInfo.collective: all_reduce, all_gather_into_tensor, ... of
// torch.distributed) as pure functions: their label in the graph (kind, group size), their
// facts in the inspector, and the distinct shape and colours they are drawn in; and the
// inspector's facts of a sharded parameter (NodeInfo.placement).
import type { CollectiveNodeInfo, NodeInfo, PlacementInfo } from "../graph/protocol";

/** The outline of a collective: orange, on any fill (a metric overlay colours the fill). */
export const COLLECTIVE_STROKE = "rgb(232,89,12)";
const COLLECTIVE_FILL = { light: "rgb(255,232,204)", dark: "rgb(92,43,10)" };

export function collectiveFill(dark: boolean): string {
  return dark ? COLLECTIVE_FILL.dark : COLLECTIVE_FILL.light;
}

/** "2 ranks" (a group of one: "1 rank"). */
export function groupText(c: CollectiveNodeInfo): string {
  const n = c.groupRanks.length;
  return `${n} rank${n === 1 ? "" : "s"}`;
}

/** The node's two lines: its kind (with passes), then the group size before the shape. */
export function collectiveLines(n: NodeInfo, c: CollectiveNodeInfo, shape: string): [string, string] {
  const passes = n.nPasses > 1 ? ` ×${n.nPasses}` : "";
  return [`⇄ ${c.kind}${passes}`, shape ? `${groupText(c)} · ${shape}` : groupText(c)];
}

/** The inspector's rows for a collective: kind, group, bytes sent, phase, engine. */
export function collectiveFacts(c: CollectiveNodeInfo, fmtBytes: (n: number) => string): [string, string][] {
  const ranks = c.groupRanks.length > 12 ? `${c.groupRanks.slice(0, 12).join(", ")}, …` : c.groupRanks.join(", ");
  return [
    ["collective", c.kind],
    ["group", `${groupText(c)}: ${ranks}`],
    ["sent", fmtBytes(c.nbytes)],
    ["phase", c.phase],
    ["engine", c.engine || "the model's own call"],
  ];
}

/** A collective's outline: a hexagon with pointed left and right ends (data going both
 * ways), where other ops are rounded rectangles. Leaves the path for fill and stroke. */
export function hexagonPath(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number): void {
  const tip = Math.min(h / 2, w / 4);
  ctx.beginPath();
  ctx.moveTo(x + tip, y);
  ctx.lineTo(x + w - tip, y);
  ctx.lineTo(x + w, y + h / 2);
  ctx.lineTo(x + w - tip, y + h);
  ctx.lineTo(x + tip, y + h);
  ctx.lineTo(x, y + h / 2);
  ctx.closePath();
}

/** The inspector's rows for a sharded parameter: placements on the mesh, full and local
 * shape, what its gradient is. */
export function placementFacts(p: PlacementInfo, fmtShape: (s: number[]) => string): [string, string][] {
  const dims = p.meshShape.map((n, i) => (p.meshDimNames[i] ? `${p.meshDimNames[i]}=${n}` : String(n)));
  return [
    ["sharded", `${p.placements.join(", ")} on mesh (${dims.join(", ")})`],
    ["full shape", fmtShape(p.fullShape)],
    ["this rank", fmtShape(p.localShape)],
    ["gradient", p.grad],
  ];
}
