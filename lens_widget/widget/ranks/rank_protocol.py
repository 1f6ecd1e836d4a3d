"""The rank view's part of the kernel-frontend contract (protocol.py re-exports it; the
TypeScript side is in js/src/graph/protocol.ts, checked by test_protocol_contract.py)."""

from typing import Literal, NotRequired

# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import TypedDict

# log/distributed.py's StepPhase
CollectivePhase = Literal["forward", "backward", "optimizer"]


class CollectiveNodeInfo(TypedDict):
    """NodeInfo.collective: the op is a collective (ModelLog.collectives)."""

    kind: str
    groupRanks: list[int]
    nbytes: int
    phase: CollectivePhase
    engine: str


class PlacementInfo(TypedDict):
    """NodeInfo.placement: a parameter an engine sharded (ModelLog.placements)."""

    fullShape: list[int]
    localShape: list[int]
    placements: list[str]
    meshShape: list[int]
    meshDimNames: list[str]
    grad: str


class RanksInfo(TypedDict):
    """GraphPayload.ranks: a widget of several ranks' logs (LensWidget.from_logs)."""

    ranks: list[int]
    worldSize: int | None
    shown: int
    compareWith: int | None  # the rank compared with (B of the comparison), else None


class ShowRankParams(TypedDict):
    rank: int
    compareWith: NotRequired[int]


class ShowRankRequest(TypedDict):
    method: Literal["showRank"]
    params: ShowRankParams
