"""The `graph` trait's part of the kernel-frontend contract: the payload a widget syncs
(nodes, edges, modules, gradients, the comparison and ablation marks), as TypedDicts.

Split from protocol.py (which re-exports every name here) so that the payload's shape reads
apart from the requests'; js/src/graph/protocol.ts holds the same interfaces, checked by
tests/python/test_protocol_contract.py.
"""

from typing import Literal, NotRequired

# No `from __future__ import annotations`: TypedDict reads NotRequired from live annotations.
from typing_extensions import TypedDict

from lens_widget.widget.ranks.rank_protocol import CollectiveNodeInfo, PlacementInfo, RanksInfo

NodeKind = Literal["input", "param", "buffer", "const", "op", "output"]
ViewName = Literal["rolled", "unrolled"]
LeafKind = Literal["param", "input", "other"]
AblationKind = Literal["zero", "mean"]

# ---- the `graph` trait (kernel -> frontend) -------------------------------------------


class ModuleOutputInfo(TypedDict):
    path: str
    node: str
    output: int
    shape: list[int] | None


class ModuleInfo(TypedDict):
    address: str
    className: str
    parent: str | None
    nPasses: int
    nOps: int
    kind: NotRequired[Literal["function"]]
    outputs: NotRequired[list[list[ModuleOutputInfo]]]
    # returns its input unchanged (Identity, Dropout in eval): folded into the op before it
    passThrough: NotRequired[bool]


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
