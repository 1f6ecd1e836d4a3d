"""The kernel's side of the contract with the frontend: js/src/**/protocol.ts, as TypedDicts.

Every dict that crosses the wire is one of these. Names and keys are those of protocol.ts
(camelCase, as the frontend reads them); tests/python/test_protocol_contract.py parses the
TypeScript and fails when a key, its optionality or its nullability differs between the two.
Inline TypeScript object types (`params: { id: string }`) get a named TypedDict here.

This module is the contract's index: the synced traits (`WidgetTraits`) and the table of
request kinds (`REQUEST_KINDS`) live here; the types are written by part and re-exported,
so `protocol.X` names every one: the graph payload (graph_protocol.py), the requests and
replies (request_protocol.py), the monitor view's (monitor_protocol.py), the rank view's
(rank_protocol.py).
"""

from typing import NamedTuple

# typing's own TypedDict learns NotRequired only in 3.11; torch depends on typing_extensions.
# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import TypedDict

# The graph payload's part (names re-exported: protocol.X for every type)
from lens_widget.widget.graph_protocol import (  # noqa: F401
    AblationInfo,
    AblationKind,
    BackwardNodeInfo,
    BackwardPassInfo,
    CompareInfo,
    EdgeInfo,
    GradientInfo,
    GraphPayload,
    LeafInfo,
    LeafKind,
    ModuleInfo,
    ModuleOutputInfo,
    NodeInfo,
    NodeKind,
    ParamEntry,
    ViewGraph,
    ViewName,
)

# The monitor view's part (names re-exported likewise)
from lens_widget.widget.monitor.monitor_protocol import (  # noqa: F401
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
from lens_widget.widget.ranks.rank_protocol import (  # noqa: F401
    CollectiveNodeInfo,
    CollectivePhase,
    PlacementInfo,
    RanksInfo,
    ShowRankParams,
    ShowRankRequest,
)

# The requests and their replies (names re-exported likewise)
from lens_widget.widget.request_protocol import (  # noqa: F401
    AblateParams,
    AblateRequest,
    ActivationParams,
    ActivationRequest,
    ActivationResult,
    ActivationStats,
    AttentionParams,
    AttentionRequest,
    AttentionResult,
    BatchWindow,
    CallArgument,
    ChannelWindow,
    CompareSide,
    EndAblationParams,
    EndAblationRequest,
    FirstNonfiniteParams,
    FirstNonfiniteRequest,
    FirstNonfiniteResult,
    Histogram,
    MetricName,
    MetricsParams,
    MetricsRequest,
    MetricsResult,
    ModuleDetailsParams,
    ModuleDetailsRequest,
    ModuleDetailsResult,
    ModuleParam,
    NonfiniteReach,
    OpDetailsParams,
    OpDetailsRequest,
    OpDetailsResult,
    PlotKind,
    RerunParams,
    RerunRequest,
    RerunResult,
    ResponseMessage,
    ValueKind,
    WaitingMessage,
)

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
