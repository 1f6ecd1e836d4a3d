// The order of the backward panel's leaves: those that got no gradient first (the bug people
// hunt for), then those whose gradient holds a NaN/Inf, then the rest by the sort picked.
import type { LeafInfo } from "../graph/protocol";

export type LeafSort = "norm" | "name" | "model";

export const LEAF_SORTS: [LeafSort, string][] = [
  ["norm", "by norm"],
  ["name", "by name"],
  ["model", "model order"],
];

/** 0: got no gradient, 1: a NaN/Inf gradient (its norm is null), 2: a finite one. */
export function leafRank(leaf: LeafInfo): number {
  if (!leaf.received) return 0;
  return leaf.gradNorm == null ? 1 : 2; // == null: also a notebook saved before gradNorm
}

/** `leaves` (in the kernel's, the model's, order) sorted for the panel; a new array. */
export function sortLeaves(leaves: readonly LeafInfo[], sort: LeafSort): LeafInfo[] {
  const order = new Map(leaves.map((l, i) => [l, i]));
  return [...leaves].sort((a, b) => {
    const rank = leafRank(a) - leafRank(b);
    if (rank) return rank;
    if (sort === "norm" && a.gradNorm != null && b.gradNorm != null && a.gradNorm !== b.gradNorm)
      return b.gradNorm - a.gradNorm; // largest first
    if (sort === "name" && a.name !== b.name) return a.name < b.name ? -1 : 1;
    return order.get(a)! - order.get(b)!;
  });
}
