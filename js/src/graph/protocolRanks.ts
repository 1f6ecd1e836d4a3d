// The rank view's part of the contract (LensWidget.from_logs: several ranks' logs, one shown),
// and what a distributed log adds to a node. Python side: lens_widget/widget/ranks/rank_protocol.py.
// Re-exported by protocol.ts, whose contract test reads this file too.

/** The ranks of a widget made by LensWidget.from_logs (widget/ranks/rank_view.py). */
export interface RanksInfo {
  ranks: number[]; // every rank with a log, in order
  worldSize: number | null;
  shown: number; // the rank whose log is shown (A of a comparison)
  compareWith: number | null; // the rank it is compared with (B), null when none
}

/** NodeInfo.placement: how a sharded parameter lives on this rank (ModelLog.placements). */
export interface PlacementInfo {
  fullShape: number[]; // its logical shape, as the undistributed model has it
  localShape: number[]; // the shard this rank holds
  placements: string[]; // one per mesh dim, as DTensor prints them: "Shard(dim=0)", "Replicate()"
  meshShape: number[];
  meshDimNames: string[]; // empty when the mesh dims are not named
  grad: string; // what its kept gradient is: "local shard", "full", "none"
}

export type CollectivePhase = "forward" | "backward" | "optimizer";

/** NodeInfo.collective: the op is a collective of torch.distributed (ModelLog.collectives). */
export interface CollectiveNodeInfo {
  kind: string; // "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", ...
  groupRanks: number[]; // the global ranks of its process group
  nbytes: number; // bytes this rank sent into it
  phase: CollectivePhase;
  engine: string; // "" (the user's own call), "fsdp", "ddp", "dtensor"
}

export interface ShowRankRequest {
  method: "showRank";
  params: ShowRankParams;
}

export interface ShowRankParams {
  rank: number;
  compareWith?: number; // left out: no comparison
}
