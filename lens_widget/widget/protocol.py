"""The kernel's side of the contract with the frontend: js/src/**/protocol.ts, as TypedDicts.

Every dict that crosses the wire is one of these. Names and keys are those of protocol.ts
(camelCase, as the frontend reads them); tests/python/test_protocol_contract.py parses the
TypeScript and fails when a key, its optionality or its nullability differs between the two.
Inline TypeScript object types (`params: { id: string }`) get a named TypedDict here.
"""

from typing import Literal, NamedTuple

# typing's own TypedDict learns NotRequired only in 3.11; torch depends on typing_extensions.
# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import NotRequired, TypedDict

# The monitor view's part of the contract (names re-exported: protocol.X for every type)
from lens_widget.widget.monitor_protocol import (  # noqa: F401
    MonitorFirstNonfinite,
    MonitorInfo,
    MonitorMode,
    MonitorRankedOp,
    MonitorSeriesParams,
    MonitorSeriesRequest,
    MonitorSeriesResult,
    MonitorSide,
    MonitorStat,
    MonitorStepParams,
    MonitorStepRequest,
    MonitorStepResult,
)

# The rank view's part (LensWidget.from_logs, collectives; names re-exported likewise)
from lens_widget.widget.rank_protocol import (  # noqa: F401
    CollectiveNodeInfo,
    CollectivePhase,
    PlacementInfo,
    RanksInfo,
    ShowRankParams,
    ShowRankRequest,
)

NodeKind = Literal["input", "param", "buffer", "const", "op", "output"]
ViewName = Literal["rolled", "unrolled"]
PlotKind = Literal["scalar", "line", "heatmap", "images", "sequence"]
CompareSide = Literal["a", "b", "diff"]
ValueKind = Literal["activation", "grad"]
LeafKind = Literal["param", "input", "other"]
AblationKind = Literal["zero", "mean"]
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

# ---- the `graph` trait (kernel -> frontend) -------------------------------------------


class ModuleInfo(TypedDict):
    address: str
    className: str
    parent: str | None
    nPasses: int
    nOps: int
    kind: NotRequired[Literal["function"]]


# [parameter name, its shape]: a TypeScript tuple `[string, number[]]`, a list in JSON.
ParamEntry = list[str | list[int]]


class NodeInfo(TypedDict):
    id: str
    kind: NodeKind
    func: str
    groups: list[str]
    module: str
    shape: list[int] | None
    dtype: str | None
    device: str | None
    nbytes: int
    params: list[ParamEntry]
    hasParams: bool
    fromInput: bool
    feedsOutput: bool
    failed: bool
    intervened: bool
    saved: bool
    noValues: str | None  # why the op has no values at all (meta, torch.func transform)
    source: str
    sourceCode: str
    nPasses: int
    passes: list[str]
    attention: bool
    collective: NotRequired[CollectiveNodeInfo]  # a collective op (ModelLog.collectives)
    placement: NotRequired[PlacementInfo]  # a sharded parameter (ModelLog.placements)
    passShapes: NotRequired[list[list[int]]]  # rolled: distinct shapes of passes that differ


class EdgeInfo(TypedDict):
    source: str
    target: str
    shape: str
    passes: list[int]


class ViewGraph(TypedDict):
    nodes: list[NodeInfo]
    edges: list[EdgeInfo]


class CompareInfo(TypedDict):
    onlyA: list[str]
    onlyB: list[str]


class LeafInfo(TypedDict):
    name: str
    kind: LeafKind
    shape: list[int]
    dtype: str
    label: str | None
    source: str
    received: bool
    passes: list[int]
    gradNorm: float | None  # L2 norm of its gradient (summed over passes); None: none or NaN/Inf


class BackwardPassInfo(TypedDict):
    index: int
    call: str
    retainGraph: bool
    source: str
    nodes: list[str]
    error: str | None
    errorOp: str | None
    errorSource: str | None
    freedBy: int | None
    inTransform: bool


class BackwardNodeInfo(TypedDict):
    id: str
    gradFn: str
    forwardOp: str | None
    withinOp: str | None
    order: int
    passes: list[int]
    gradShapes: list[str]
    leaf: str | None
    next: list[str]


class GradientInfo(TypedDict):
    passes: list[BackwardPassInfo]
    leaves: list[LeafInfo]
    noGrad: list[str]
    backward: list[BackwardNodeInfo]


class AblationInfo(TypedDict):
    target: str
    kind: AblationKind
    dim: int | None
    dimName: str | None
    text: str


class GraphPayload(TypedDict):
    modelClass: str
    error: str | None
    failedOp: str | None
    nOps: int
    modules: list[ModuleInfo]
    repeatedBlocks: list[list[str]]
    unrolled: ViewGraph
    rolled: ViewGraph
    compare: NotRequired[CompareInfo]
    gradients: NotRequired[GradientInfo]
    ablation: NotRequired[AblationInfo]
    noRerun: NotRequired[str]  # why the model cannot be re-run (a widget built from a log)
    ranks: NotRequired[RanksInfo]  # a widget of several ranks' logs (LensWidget.from_logs)
    # rolled ids of the layers whose later pass reads their earlier one (log.recurrent_layers)
    recurrentLayers: NotRequired[list[str]]


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


# ---- the synced traits (widget/lens_widget.py's traitlets, as the frontend reads them) ---


class WidgetTraits(TypedDict):
    graph: GraphPayload  # kernel -> frontend only, as wire.py's compact bytes
    selected: str
    view: ViewName
    expanded: list[str]
    status: str
    monitor: MonitorInfo | None  # kernel -> frontend: a monitor's steps (from_monitor), else None
    step: int  # the monitor step shown; -1: follow the latest
    height: int | None  # graph px (LensWidget(height=...), the drag handle); None: auto


# ---- the request kinds: one table, read by the widget, the page and the contract test ----


class RequestKind(NamedTuple):
    request: type  # the request's TypedDict (its `method` is the table's key)
    result: type  # the `result` of its ok response
    runs_model: bool  # re-traces the model: queued behind a running cell, refused by a page
    on_page: bool  # a standalone HTML page answers it from what it embeds, with no kernel


REQUEST_KINDS: dict[str, RequestKind] = {
    "activation": RequestKind(ActivationRequest, ActivationResult, False, True),
    "attention": RequestKind(AttentionRequest, AttentionResult, False, False),
    "metrics": RequestKind(MetricsRequest, MetricsResult, False, True),
    "firstNonfinite": RequestKind(FirstNonfiniteRequest, FirstNonfiniteResult, False, True),
    "rerun": RequestKind(RerunRequest, RerunResult, True, False),
    "ablate": RequestKind(AblateRequest, RerunResult, True, False),
    "endAblation": RequestKind(EndAblationRequest, RerunResult, False, False),
    "monitorStep": RequestKind(MonitorStepRequest, MonitorStepResult, False, False),
    "monitorSeries": RequestKind(MonitorSeriesRequest, MonitorSeriesResult, False, False),
    "opDetails": RequestKind(OpDetailsRequest, OpDetailsResult, False, True),
    "moduleDetails": RequestKind(ModuleDetailsRequest, ModuleDetailsResult, False, True),
    "showRank": RequestKind(ShowRankRequest, RerunResult, False, False),
}
