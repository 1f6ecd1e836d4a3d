// The contract between the kernel (lens_widget/widget/) and this frontend.
// Python builds GraphPayload from a ModelLog and syncs it, compactly encoded, as the `graph` trait;
// activations travel on demand as request/response custom messages with binary buffers.

export type NodeKind = "input" | "param" | "buffer" | "const" | "op" | "output";
export type ViewName = "rolled" | "unrolled";

/** Synced traits (both ways unless noted). */
export interface WidgetTraits {
  graph: DataView | GraphPayload; // kernel -> frontend only: wire.py's compact bytes (kernel/wire.ts decodes them)
  selected: string; // node id of the current view ("" for none)
  view: ViewName;
  expanded: string[]; // module addresses that are expanded (same set for both views)
  status: string; // kernel -> frontend: "" or a message such as "re-running the model…"
}

export interface GraphPayload {
  modelClass: string;
  error: string | null; // "TypeError: ..." when the forward pass raised (partial trace)
  failedOp: string | null; // unrolled id of the op that raised, if it was a torch op
  nOps: number;
  modules: ModuleInfo[]; // every module that ran, parents before children
  unrolled: ViewGraph;
  rolled: ViewGraph;
}

export interface ModuleInfo {
  address: string; // "transformer.h.0.attn"; "" is the root model itself
  className: string;
  parent: string | null; // address of the enclosing module, null for the root
  nPasses: number;
  nOps: number; // ops inside it, nested ones included, in the unrolled view (one pass counted once per pass)
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
  saved: boolean; // activation available in the kernel
  source: string; // "path/to/file.py:123" of the user code that called it
  sourceCode: string; // that line's text, stripped
  nPasses: number; // 1 in the unrolled view
  passes: string[]; // rolled: unrolled ids of each pass, in order; unrolled: [id]
}

export interface EdgeInfo {
  source: string;
  target: string;
  shape: string; // "1x128x768" (text shown on the edge)
  passes: number[]; // rolled: passes (1-based) this edge occurs in; unrolled: []
}

// ---- Requests (frontend -> kernel) via model.send({type: "request", id, method, params}) ----
// Replies arrive as custom messages {type: "response", id, ok, result | error} with buffers.

export interface ActivationRequest {
  method: "activation";
  params: {
    id: string; // an unrolled node id (in the rolled view the frontend sends the chosen pass's id)
    output?: number; // which output of a multi-output op (default 0)
    batch?: number; // index along the first dim for "images" and "sequence" plots (default 0)
    channelStart?: number; // first channel of the image grid (default 0)
  };
}

export interface RerunRequest {
  method: "rerun"; // re-trace saving this node; the graph trait is updated afterwards
  params: { id: string };
}

export type Request = ActivationRequest | RerunRequest;

export type PlotKind = "scalar" | "line" | "heatmap" | "images" | "sequence";

export interface ActivationStats {
  numel: number;
  min: number;
  max: number;
  mean: number;
  std: number;
  zeros: number; // share of exact zeros, 0..1
  nan: number; // count
  inf: number; // count
}

/** result of "activation"; buffers[0] holds float32 little-endian values of `data`. */
export interface ActivationResult {
  id: string;
  output: number;
  nOutputs: number;
  shape: number[];
  dtype: string;
  plot: PlotKind;
  // Shape of the values in buffers[0]: line [n]; heatmap/sequence [rows, cols];
  // images [channels, h, w]; scalar [1].
  dataShape: number[];
  reduced: boolean; // true when the kernel downsampled or cropped before sending
  note: string; // human text on what was reduced ("rows 1024 -> 256 (mean of 4)")
  stats: ActivationStats;
  hist: { edges: number[]; counts: number[] }; // over all finite values of the full tensor
  batch: { index: number; size: number } | null; // slider over the first dim
  channels: { start: number; count: number; total: number } | null; // images: channel window
}

export interface ResponseMessage {
  type: "response";
  id: number | null; // null when the request's own id was not an integer
  ok: boolean;
  result?: ActivationResult | { ok: true };
  error?: string;
}
