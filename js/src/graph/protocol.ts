// The contract between the kernel (lens_widget/widget/) and this frontend.
// Python builds GraphPayload from a ModelLog and syncs it, compactly encoded, as the `graph` trait;
// activations travel on demand as request/response custom messages with binary buffers.
// The parts of one view or request live beside this file (protocolRanks.ts, protocolMonitor.ts,
// protocolInspect.ts, protocolValues.ts) and are re-exported here: import from this module.

import type { ModuleDetailsRequest, ModuleDetailsResult, OpDetailsRequest, OpDetailsResult } from "./protocolInspect";
import type {
  MonitorInfo,
  MonitorSeriesRequest,
  MonitorSeriesResult,
  MonitorStepRequest,
  MonitorStepResult,
} from "./protocolMonitor";
import type { CollectiveNodeInfo, PlacementInfo, RanksInfo, ShowRankRequest } from "./protocolRanks";
import type { ActivationRequest, ActivationResult, AttentionRequest, AttentionResult } from "./protocolValues";

export type * from "./protocolInspect";
export type * from "./protocolMonitor";
export type * from "./protocolRanks";
export type * from "./protocolValues";

export type NodeKind = "input" | "param" | "buffer" | "const" | "op" | "output";
export type ViewName = "rolled" | "unrolled";

/** Synced traits (both ways unless noted). */
export interface WidgetTraits {
  graph: DataView | GraphPayload; // kernel -> frontend only: wire.py's compact bytes (kernel/wire.ts decodes them)
  selected: string; // node id of the current view ("" for none)
  view: ViewName;
  // Module addresses that are expanded (same set for both views), and the frontend's own
  // groups: a repeated-block stack "transformer.h.0×24", an output group "output.past_key_values".
  expanded: string[];
  status: string; // kernel -> frontend: "" or a message such as "re-running the model…"
  monitor: MonitorInfo | null; // kernel -> frontend: a monitor's steps (LensWidget.from_monitor), else null
  step: number; // the monitor step shown; -1: follow the latest
  height: number | null; // the graph's height in px (LensWidget(height=...), the drag handle); null: from the notebook
}

export interface GraphPayload {
  modelClass: string;
  error: string | null; // "TypeError: ..." when the forward pass raised (partial trace)
  failedOp: string | null; // unrolled id of the op that raised, if it was a torch op
  nOps: number;
  modules: ModuleInfo[]; // every module that ran, parents before children
  // Chains of sibling modules running the same ops (ModelLog.repeated_blocks), e.g.
  // [["transformer.h.0", …, "transformer.h.23"]]: shown as one group "GPT2Block ×24". The
  // rolled view's nodes already fold each chain onto its first block.
  repeatedBlocks: string[][];
  unrolled: ViewGraph;
  rolled: ViewGraph;
  compare?: CompareInfo; // set by LensWidget.compare(a, b): the graph is A's, colored by A vs B
  gradients?: GradientInfo; // set when the log kept gradients of a traced backward
  ablation?: AblationInfo; // set by an "ablate" request: the comparison is clean (A) vs ablated (B)
  noRerun?: string; // why the model cannot be re-run (a widget built from a log); absent when it can
  ranks?: RanksInfo; // set by LensWidget.from_logs: several ranks' logs, one shown (ranks/rankPicker.ts)
  // rolled ids of the layers whose later pass reads their earlier one (ModelLog.recurrent_layers:
  // log.structure is "recurrent"); absent when there are none
  recurrentLayers?: string[];
}

/** What a traced backward left (ModelLog.leaves, .backward_passes, .backward_graph). */
export interface GradientInfo {
  passes: BackwardPassInfo[]; // the backward calls, in the order they ran
  leaves: LeafInfo[]; // autograd leaves the section used: those with no gradient first
  noGrad: string[]; // unrolled ids of nodes whose output no backward pass reached
  backward: BackwardNodeInfo[]; // the autograd nodes that ran, in execution order
}

export type LeafKind = "param" | "input" | "other";

export interface LeafInfo {
  name: string; // "fc.weight", "input.0", or the file:line that made it
  kind: LeafKind;
  shape: number[];
  dtype: string;
  label: string | null; // its unrolled node id (a param/input source), null when no op read it
  source: string;
  received: boolean; // false: requires grad but no backward pass reached it
  passes: number[]; // backward passes (1-based) that reached it
  gradNorm: number | null; // L2 norm of its gradient (summed over passes); null: none, or NaN/Inf
}

export interface BackwardPassInfo {
  index: number; // 1-based
  call: string; // "backward" | "autograd.grad"
  retainGraph: boolean;
  source: string; // "file.py:12" of the call
  nodes: string[]; // ids of BackwardNodeInfo in the order they ran in this pass
  error: string | null; // the pass raised: its message
  errorOp: string | null; // unrolled id of the forward op whose saved tensors were involved
  errorSource: string | null;
  freedBy: number | null; // the earlier pass that freed those saved tensors
  inTransform: boolean; // ran inside a torch.func transform (is_grads_batched, func.grad): kept no gradient
}

export interface BackwardNodeInfo {
  id: string;
  gradFn: string; // "MmBackward0", "AccumulateGrad"
  forwardOp: string | null; // unrolled id of the forward op that created it
  withinOp: string | null; // or of the op whose internals created it (F.linear's mm, t, view)
  order: number; // position in execution order
  passes: number[]; // backward passes it ran in
  gradShapes: string[]; // "2x8" per gradient it produced
  leaf: string | null; // AccumulateGrad: the leaf's name
  next: string[]; // ids of the nodes its gradients flowed to
}

export type AblationKind = "zero" | "mean";

export interface AblationInfo {
  target: string; // op label (one pass) or rolled layer (every pass) whose output was replaced
  kind: AblationKind;
  dim: number | null; // "mean": the dim averaged over
  dimName: string | null; // what that dim is ("token", "dim 2")
  text: string; // "relu_1_2 zeroed", "linear_2_7 replaced by its mean over token"
}

export interface CompareInfo {
  onlyA: string[]; // unrolled ids of ops that ran in A only
  onlyB: string[]; // labels of ops that ran in B only (not in the graph)
}

export interface ModuleInfo {
  address: string; // "transformer.h.0.attn"; "" is the root model itself
  className: string;
  parent: string | null; // address of the enclosing module, null for the root
  nPasses: number;
  nOps: number; // ops inside it, nested ones included, in the unrolled view (one pass counted once per pass)
  // "function": not a module but a plain function of the model's code its parent's forward
  // called (address "transformer.create_causal_mask()", className its name): a box of its ops
  kind?: "function";
  // returns its input unchanged (nn.Identity, Dropout in eval or p=0): folded into the op
  // before it on the graph until its address is opened (wiring/passThrough.ts offers that)
  passThrough?: boolean;
  // per pass (index pass - 1), every tensor it returned, in order; absent for a function box
  // and for a module that returned no tensor. The box's shape line and the module inspector
  // both read this list.
  outputs?: ModuleOutputInfo[][];
}

export interface ModuleOutputInfo {
  path: string; // where it sat in the value returned: "boxes", "0", "0.scores"; "" for a lone tensor
  node: string; // unrolled id of the node that made it
  output: number; // which of that node's outputs it is (a topk's indices: 1)
  shape: number[] | null;
}

export interface ViewGraph {
  nodes: NodeInfo[]; // in execution order
  edges: EdgeInfo[];
}

export interface NodeInfo {
  id: string; // unrolled: op label "linear_2_7:3"; rolled: layer label "linear_2_7"
  kind: NodeKind;
  func: string; // torch function name ("linear", "__add__"); for sources/sinks their name ("input.0", "transformer.wte.weight")
  // Enclosing module groups, outermost first. Unrolled: "address:pass" (pass is 1-based);
  // rolled: "address". The root model is not a group. Params/buffers/consts sit in the
  // groups of their first consumer.
  groups: string[];
  module: string; // innermost module address ("" outside any)
  shape: number[] | null;
  dtype: string | null;
  device: string | null;
  nbytes: number;
  params: [string, number[]][]; // parameters the op used: [name, shape]
  hasParams: boolean;
  fromInput: boolean; // descends from a model input (false: created inside the model -> grey)
  feedsOutput: boolean; // false -> faded
  failed: boolean; // raised during the forward pass -> red
  intervened: boolean; // its output was replaced by trace(..., intervene=...) (rolled: any pass)
  saved: boolean; // activation available in the kernel
  noValues: string | null; // why the op has no values at all (meta device, inside a torch.func transform)
  source: string; // "path/to/file.py:123" of the user code that called it
  sourceCode: string; // that line's text, stripped
  nPasses: number; // 1 in the unrolled view
  passes: string[]; // rolled: unrolled ids of each pass, in order; unrolled: [id]
  attention: boolean; // an attention op (SDPA, MHA): its weights can be asked for ("attention")
  collective?: CollectiveNodeInfo; // a collective op: drawn distinctly, colored by "commBytes"
  placement?: PlacementInfo; // a parameter an engine sharded (FSDP2, tensor parallel)
  // rolled: the distinct output shapes of its passes, in order, when they differ (`shape` is the
  // first pass's); absent when every pass had one shape
  passShapes?: number[][];
}

export interface EdgeInfo {
  source: string;
  target: string;
  shape: string; // "1x128x768" (text shown on the edge)
  passes: number[]; // rolled: the target's passes (1-based) it feeds, or for a target that runs once the source's passes; unrolled: []
}

// ---- Requests (frontend -> kernel) via model.send({type: "request", id, method, params}) ----
// Replies arrive as custom messages {type: "response", id, ok, result | error} with buffers.

// Overlay metrics; relL2/maxAbs/cosine only in a comparison; gradNorm (L2 norm of the summed
// gradient) and gradNonfinite (1 where it holds NaN/Inf) only for a log with gradients;
// commBytes (the bytes each collective sent) only for a log with collectives.
export type MetricName =
  | "flops"
  | "time"
  | "bytes"
  | "params"
  | "mean"
  | "std"
  | "absmax"
  | "zeroFraction"
  | "nonfinite"
  | "nonfiniteMasked"
  | "relL2"
  | "maxAbs"
  | "cosine"
  | "gradNorm"
  | "gradNonfinite"
  | "commBytes";

/** result MetricsResult; buffers[0]: float32 LE values, one per id of `ids` (NaN: no value). */
export interface MetricsRequest {
  method: "metrics";
  params: { metric: MetricName };
}

/** result FirstNonfiniteResult: the op that produced the first NaN/Inf (log.first_nonfinite()). */
export interface FirstNonfiniteRequest {
  method: "firstNonfinite";
  // biome-ignore lint/complexity/noBannedTypes: an empty object on the wire, as protocol.py types it
  params: {};
}

export interface MetricsResult {
  metric: MetricName;
  ids: string[]; // unrolled op ids, in the order of the values
}

export interface FirstNonfiniteResult {
  id: string | null;
}

export interface RerunRequest {
  method: "rerun"; // re-trace saving this node; the graph trait is updated afterwards
  params: { id: string };
}

/** Re-traces with the op's output replaced (zero, or its mean over `dim`); result { ok: true },
 * the graph trait then holds the comparison clean (A) vs ablated (B) with `ablation` set. */
export interface AblateRequest {
  method: "ablate";
  params: {
    id: string; // an unrolled op id (one pass) or a rolled layer id (every pass)
    kind: AblationKind;
    dim?: number; // "mean" only: the dim to average over
  };
}

/** Back from an ablation to the plain trace; result { ok: true }. */
export interface EndAblationRequest {
  method: "endAblation";
  // biome-ignore lint/complexity/noBannedTypes: an empty object on the wire, as protocol.py types it
  params: {};
}

/** The result of a request that changes the graph (rerun, ablate, endAblation): the new
 * graph arrives as a trait change. */
export interface RerunResult {
  ok: true;
}

export type Request =
  | AblateRequest
  | OpDetailsRequest
  | ModuleDetailsRequest
  | EndAblationRequest
  | ActivationRequest
  | AttentionRequest
  | RerunRequest
  | MetricsRequest
  | FirstNonfiniteRequest
  | MonitorStepRequest
  | MonitorSeriesRequest
  | ShowRankRequest;

/** Every request kind, once (lens_widget/widget/protocol.py REQUEST_KINDS, checked against it):
 * whether it re-traces the model (the kernel queues it behind a running cell, a saved page
 * refuses it) and whether a standalone page answers it from what it embeds (kernel/offline.ts).
 * `satisfies`: a Request whose method has no entry here fails to compile. */
export const REQUEST_KINDS = {
  activation: { runsModel: false, onPage: true },
  attention: { runsModel: false, onPage: false },
  metrics: { runsModel: false, onPage: true },
  firstNonfinite: { runsModel: false, onPage: true },
  rerun: { runsModel: true, onPage: false },
  ablate: { runsModel: true, onPage: false },
  endAblation: { runsModel: false, onPage: false },
  monitorStep: { runsModel: false, onPage: false },
  monitorSeries: { runsModel: false, onPage: false },
  opDetails: { runsModel: false, onPage: true },
  moduleDetails: { runsModel: false, onPage: true },
  showRank: { runsModel: false, onPage: false },
} as const satisfies Record<Request["method"], { runsModel: boolean; onPage: boolean }>;

/** Sent at once for a request that runs the model (rerun, ablate) while a notebook cell runs:
 * the kernel runs it when the cell has finished, then sends its ResponseMessage (same id). */
export interface WaitingMessage {
  type: "waiting";
  id: number;
  reason: string; // "waiting for the running cell"
}

export interface ResponseMessage {
  type: "response";
  id: number | null; // null when the request's own id was not an integer
  ok: boolean;
  // biome-ignore format: one line, as the contract test reads a member
  result?: ActivationResult | AttentionResult | RerunResult | MetricsResult | FirstNonfiniteResult | MonitorStepResult | MonitorSeriesResult | OpDetailsResult | ModuleDetailsResult;
  error?: string;
}
