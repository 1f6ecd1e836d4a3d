// An op's values on demand: its activation (or gradient) and an attention op's weights, asked
// for by the inspector and answered with binary buffers. Python side: lens_widget/widget/protocol.py.
// Re-exported by protocol.ts, whose contract test reads this file too.

export interface ActivationRequest {
  method: "activation";
  params: {
    id: string; // an unrolled node id (in the rolled view the frontend sends the chosen pass's id)
    output?: number; // which output of a multi-output op (default 0)
    batch?: number; // index along the first dim for "images" and "sequence" plots (default 0)
    channelStart?: number; // first channel of the image grid (default 0)
    side?: CompareSide; // in a comparison: A's value (default), B's, or A−B
    value?: ValueKind; // the op's output (default) or the gradient that flowed into it
    backwardPass?: number; // gradient of one backward pass (1-based); default: summed over passes
    step?: number; // a monitor's kept step: the op's value in that step's log
  };
}

export interface AttentionRequest {
  method: "attention"; // the attention weights of an attention op, recomputed from its saved inputs
  params: {
    id: string; // an unrolled node id whose NodeInfo.attention is true
    batch?: number; // batch item (batch dims before the heads flattened; default 0)
    head?: number; // default 0
  };
}

export type CompareSide = "a" | "b" | "diff";
export type ValueKind = "activation" | "grad";

export type PlotKind = "scalar" | "line" | "heatmap" | "images" | "sequence";

/** Over the finite values; null where there is none (an empty or all-NaN tensor). */
export interface ActivationStats {
  numel: number;
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  zeros: number | null; // share of exact zeros, 0..1; null for an empty tensor
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
  dims: string[]; // what each dim of `shape` is: "batch", "channel", "head", "token", "feature", "dim 3"
  axes: string[]; // what each dim of `dataShape` is ("channel×height×width" where dims were flattened)
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

/** result of "attention"; buffers[0] holds float32 probabilities, dataShape [query rows, key cols]. */
export interface AttentionResult {
  id: string;
  batch: { index: number; size: number };
  head: { index: number; size: number };
  queries: number; // query tokens of the full map
  keys: number; // key tokens of the full map
  dataShape: number[]; // after pooling to at most 256 a side
  reduced: boolean;
  note: string; // what was pooled ("query tokens 1024 -> 256 (mean of ~4)")
}
