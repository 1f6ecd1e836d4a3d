"""The requests' part of the kernel-frontend contract: what the frontend asks the kernel
(`method`, `params`) and the replies it gets (`result`, errors, the "waiting" note), as
TypedDicts.

Split from protocol.py (which re-exports every name here and holds REQUEST_KINDS, the table
of the kinds); js/src/graph/protocol.ts holds the same interfaces, checked by
tests/python/test_protocol_contract.py.
"""

from typing import Literal, NotRequired

# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import TypedDict

from lens_widget.widget.graph_protocol import AblationKind
from lens_widget.widget.monitor.monitor_protocol import MonitorSeriesResult, MonitorStepResult

PlotKind = Literal["scalar", "line", "heatmap", "images", "sequence"]
CompareSide = Literal["a", "b", "diff"]
ValueKind = Literal["activation", "grad"]
MetricName = Literal[
    "flops",
    "time",
    "bytes",
    "params",
    "mean",
    "std",
    "absmax",
    "zeroFraction",
    "nonfinite",
    "nonfiniteMasked",
    "relL2",
    "maxAbs",
    "cosine",
    "gradNorm",
    "gradNonfinite",
    "commBytes",
]

# ---- requests (frontend -> kernel) and their replies ----------------------------------


class ActivationParams(TypedDict):
    id: str
    output: NotRequired[int]
    batch: NotRequired[int]
    channelStart: NotRequired[int]
    side: NotRequired[CompareSide]
    value: NotRequired[ValueKind]
    backwardPass: NotRequired[int]
    step: NotRequired[int]  # a monitor's kept step: the op's value in that step's log


class ActivationRequest(TypedDict):
    method: Literal["activation"]
    params: ActivationParams


class AttentionParams(TypedDict):
    id: str
    batch: NotRequired[int]
    head: NotRequired[int]


class AttentionRequest(TypedDict):
    method: Literal["attention"]
    params: AttentionParams


class RerunParams(TypedDict):
    id: str


class RerunRequest(TypedDict):
    method: Literal["rerun"]
    params: RerunParams


class MetricsParams(TypedDict):
    metric: MetricName


class MetricsRequest(TypedDict):
    method: Literal["metrics"]
    params: MetricsParams


class FirstNonfiniteParams(TypedDict):
    pass


class FirstNonfiniteRequest(TypedDict):
    method: Literal["firstNonfinite"]
    params: FirstNonfiniteParams


class AblateParams(TypedDict):
    id: str
    kind: AblationKind
    dim: NotRequired[int]


class AblateRequest(TypedDict):
    method: Literal["ablate"]
    params: AblateParams


class EndAblationParams(TypedDict):
    pass


class EndAblationRequest(TypedDict):
    method: Literal["endAblation"]
    params: EndAblationParams


class OpDetailsParams(TypedDict):
    id: str


class OpDetailsRequest(TypedDict):
    method: Literal["opDetails"]
    params: OpDetailsParams


class ModuleDetailsParams(TypedDict):
    address: str


class ModuleDetailsRequest(TypedDict):
    method: Literal["moduleDetails"]
    params: ModuleDetailsParams


class CallArgument(TypedDict):
    name: str
    value: str | None
    producer: str | None
    output: int
    shape: str | None
    default: bool


NonfiniteReach = Literal["reaches", "masked"]


class OpDetailsResult(TypedDict):
    id: str
    function: str
    arguments: list[CallArgument]
    statement: str
    flops: int | None
    timeMs: float | None
    paramCount: int
    nonfinite: NonfiniteReach | None


class ModuleParam(TypedDict):
    name: str
    shape: list[int]
    numel: int
    trainable: bool


class ModuleDetailsResult(TypedDict):
    address: str
    className: str
    extraRepr: str | None
    parameters: list[ModuleParam]
    nParams: int
    nOps: int
    nPasses: int
    flops: int | None
    timeMs: float | None
    bytes: int
    outputs: list[str]


class MetricsResult(TypedDict):
    metric: MetricName
    ids: list[str]


class FirstNonfiniteResult(TypedDict):
    id: str | None


class ActivationStats(TypedDict):
    # Over the finite values; None where there is none (an empty or all-NaN tensor).
    numel: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    zeros: float | None  # share of all values; None for an empty tensor
    nan: int
    inf: int


class Histogram(TypedDict):
    edges: list[float]
    counts: list[int]


class BatchWindow(TypedDict):
    index: int
    size: int


class ChannelWindow(TypedDict):
    start: int
    count: int
    total: int


class ActivationResult(TypedDict):
    id: str
    output: int
    nOutputs: int
    shape: list[int]
    dtype: str
    plot: PlotKind
    dims: list[str]
    axes: list[str]
    dataShape: list[int]
    reduced: bool
    note: str
    stats: ActivationStats
    hist: Histogram
    batch: BatchWindow | None
    channels: ChannelWindow | None


class AttentionResult(TypedDict):
    id: str
    batch: BatchWindow
    head: BatchWindow
    queries: int
    keys: int
    dataShape: list[int]
    reduced: bool
    note: str


class RerunResult(TypedDict):
    ok: Literal[True]


class ResponseMessage(TypedDict):
    type: Literal["response"]
    id: int | None  # None when the request's own id was not an integer
    ok: bool
    result: NotRequired[
        ActivationResult
        | AttentionResult
        | RerunResult
        | MetricsResult
        | FirstNonfiniteResult
        | MonitorStepResult
        | MonitorSeriesResult
        | OpDetailsResult
        | ModuleDetailsResult
    ]
    error: NotRequired[str]


class WaitingMessage(TypedDict):
    """Sent at once for a request that runs the model while a cell runs; the response to
    it (same id) follows when the cell has finished."""

    type: Literal["waiting"]
    id: int
    reason: str
