// What an overlay's colour range spans: the items shown now (it moves as modules open and
// close), or every op and every module of the graph (it stays put as they do).
import type { GraphModel } from "../graph/tree";
import { GROUP_PREFIX } from "../graph/visibility";
import { type Aggregate, aggregate, unrolledIdsOf } from "../render/overlay";

export type RangeOf = "graph" | "shown";

/** The value of every op (a rolled node: over its passes) and of every module, collapsed or
 * not, of `model`: whatever is opened, a shown item's value is among these. NaN: no value. */
export function graphValues(model: GraphModel, values: ReadonlyMap<string, number>, agg: Aggregate): number[] {
  const of = (itemId: string): number =>
    aggregate(
      agg,
      unrolledIdsOf(model, itemId).map((id) => values.get(id) ?? NaN),
    );
  const out: number[] = [];
  for (const n of model.view.nodes) if (n.kind === "op") out.push(of(n.id));
  for (const key of model.groups.keys()) if (key !== "") out.push(of(GROUP_PREFIX + key)); // "": the view itself
  return out.filter((v) => !Number.isNaN(v));
}

/** The legend's words for the range: "whole graph" or "the 12 shown". */
export function rangeText(rangeOf: RangeOf, shown: number): string {
  return rangeOf === "graph" ? "range of the whole graph" : `range of the ${shown} shown`;
}
