// The rank picker's logic as pure functions (LensWidget.from_logs, GraphPayload.ranks): the
// choices it offers, the request a choice sends, what it says of the graph shown, and
// whether a new graph is only another rank's values on the same layout.
import type { GraphPayload, RanksInfo, ShowRankParams } from "../graph/protocol";

/** "rank 1 of 4" (or "rank 1" when the world's size is not known). */
export function rankName(rank: number, info: Pick<RanksInfo, "worldSize">): string {
  return info.worldSize === null ? `rank ${rank}` : `rank ${rank} of ${info.worldSize}`;
}

/** The ranks the "compare with" picker offers: every other rank. */
export function compareChoices(info: RanksInfo): number[] {
  return info.ranks.filter((r) => r !== info.shown);
}

/** The "showRank" params of a choice; comparing a rank with itself is no comparison. */
export function showRankParams(rank: number, compareWith: number | null): ShowRankParams {
  return compareWith === null || compareWith === rank ? { rank } : { rank, compareWith };
}

/** What the bar says of the graph shown. */
export function rankCaption(info: RanksInfo): string {
  if (info.compareWith === null) return `showing ${rankName(info.shown, info)}: its values, gradients and overlays`;
  return (
    `rank ${info.shown} (A) compared with rank ${info.compareWith} (B): colored by the relative difference ` +
    "of each op's output (data-parallel ranks differ from their inputs on; tensor-parallel ranks in their shards)"
  );
}

/** Whether `next` is another rank (or comparison) of the same graph as `prev`: the same
 * ops and edges, so the layout and camera stay where they are. */
export function sameRankGraph(prev: GraphPayload | null, next: GraphPayload | null): boolean {
  if (!prev?.ranks || !next?.ranks) return false;
  const a = prev.unrolled;
  const b = next.unrolled;
  if (a.nodes.length !== b.nodes.length || a.edges.length !== b.edges.length) return false;
  return a.nodes.every((n, i) => n.id === b.nodes[i].id) && a.edges.every((e, i) => sameEdge(e, b.edges[i]));
}

function sameEdge(a: { source: string; target: string }, b: { source: string; target: string }): boolean {
  return a.source === b.source && a.target === b.target;
}
