"""The monitor view's part of the kernel-frontend contract (protocol.py re-exports it; the
TypeScript side is in js/src/graph/protocol.ts, checked by test_protocol_contract.py)."""

from typing import Literal, NotRequired

# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import TypedDict

# The monitor view (LensWidget.from_monitor): log/monitor/step_history.py's SIDES and STAT_NAMES
MonitorSide = Literal["activation", "gradient"]
MonitorStat = Literal[
    "mean", "std", "min", "max", "absmax", "zero_fraction", "nan", "inf", "numel"
]  # fmt: skip
MonitorMode = Literal["value", "change"]


class MonitorInfo(TypedDict):
    steps: list[int]
    kept: list[int]
    nonfinite: list[int]
    grads: bool
    stats: list[str]
    every: int


class MonitorStepParams(TypedDict):
    step: int
    stat: MonitorStat
    side: NotRequired[MonitorSide]
    mode: NotRequired[MonitorMode]
    top: NotRequired[int]
    idsOf: NotRequired[int]


class MonitorStepRequest(TypedDict):
    method: Literal["monitorStep"]
    params: MonitorStepParams


class MonitorSeriesParams(TypedDict):
    id: str


class MonitorSeriesRequest(TypedDict):
    method: Literal["monitorSeries"]
    params: MonitorSeriesParams


class MonitorRankedOp(TypedDict):
    id: str
    change: float | None
    nonfinite: bool


class MonitorFirstNonfinite(TypedDict):
    id: str
    side: MonitorSide


class MonitorStepResult(TypedDict):
    step: int
    side: MonitorSide
    stat: MonitorStat
    mode: MonitorMode
    opsKey: int
    ids: list[str] | None  # None: the same ops as the frontend's `idsOf`
    ranked: list[MonitorRankedOp]
    firstNonfinite: MonitorFirstNonfinite | None


class MonitorSeriesResult(TypedDict):
    id: str
    steps: list[int]
    stats: list[str]
    sides: list[MonitorSide]
    kept: list[int]
