// Which items of each box have edges from or to outside it: an edge whose ends sit in
// different boxes climbs out of every box around its source up to the boxes' common one,
// and descends into every box around its target. Each box lays its ports out for them.
// A loop back (to an item earlier in the common box) is drawn as the reverse of a path
// that climbs out around its target and descends into its source's boxes.
import { type GraphModel, ROOT } from "../graph/tree";
import { GROUP_PREFIX, type VisEdge, type Visible } from "../graph/visibility";
import { isBack } from "./boxLayout";

/** For each box, its direct items' positions in its item order (memoised per call). */
export function itemOrder(vis: Visible): (box: string) => Map<string, number> {
  const known = new Map<string, Map<string, number>>();
  return (box) => {
    let m = known.get(box);
    if (!m) known.set(box, (m = new Map((vis.boxChildren.get(box) ?? []).map((id, i) => [id, i]))));
    return m;
  };
}

/** Whether `e` loops back in its common box: it then climbs out around its target. */
export function loopsBack(e: VisEdge, order: (box: string) => Map<string, number>): boolean {
  return isBack(order(e.lca), e.la, e.lb);
}

export interface BoxPorts {
  in: Set<string>; // direct items of the box that edges from outside reach
  out: Set<string>; // direct items of the box with edges to outside
}

/** [box, its direct item on the way] from `item`'s own box out to (not including) `lca`. */
export function boxesUpTo(vis: Visible, model: GraphModel, item: string, lca: string): [string, string][] {
  const out: [string, string][] = [];
  let box = vis.itemById.get(item)?.container ?? ROOT;
  let on = item;
  while (box !== lca && box !== ROOT) {
    out.push([box, on]);
    on = GROUP_PREFIX + box;
    box = model.groups.get(box)?.parent ?? ROOT;
  }
  return out;
}

export function boxPorts(vis: Visible, model: GraphModel): Map<string, BoxPorts> {
  const ports = new Map<string, BoxPorts>();
  const of = (box: string): BoxPorts => {
    let p = ports.get(box);
    if (!p) ports.set(box, (p = { in: new Set(), out: new Set() }));
    return p;
  };
  const seen = new Set<string>();
  const add = (id: string, lca: string, side: "in" | "out"): void => {
    const k = `${side}\n${id}\n${lca}`;
    if (seen.has(k)) return;
    seen.add(k);
    for (const [box, item] of boxesUpTo(vis, model, id, lca)) of(box)[side].add(item);
  };
  const order = itemOrder(vis);
  for (const e of vis.edges) {
    if (e.direct) continue;
    const back = loopsBack(e, order);
    add(back ? e.target : e.source, e.lca, "out");
    add(back ? e.source : e.target, e.lca, "in");
  }
  return ports;
}

/** A stable text for a box's ports, part of its layout's cache key. */
export function portsKey(p: BoxPorts | undefined): string {
  if (!p || (!p.in.size && !p.out.size)) return "";
  return `|i:${[...p.in].sort().join(",")}|o:${[...p.out].sort().join(",")}`;
}
