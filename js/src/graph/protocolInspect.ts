// What the inspector asks the kernel about an op or a module: the op's whole call ("opDetails")
// and the module inspector's facts ("moduleDetails"). Python side: lens_widget/widget/protocol.py.
// Re-exported by protocol.ts, whose contract test reads this file too.

/** result OpDetailsResult: the op's call (every argument by its role), source statement, numbers. */
export interface OpDetailsRequest {
  method: "opDetails";
  params: { id: string }; // an unrolled node id
}

/** result ModuleDetailsResult: what the module inspector shows. */
export interface ModuleDetailsRequest {
  method: "moduleDetails";
  params: { address: string }; // "" is the model itself
}

/** One argument of a call: a tensor (named by the node that produced it) or a printed value. */
export interface CallArgument {
  name: string; // its role from the function's signature: "query", "attn_mask", "input", "weight", "dim0"
  value: string | null; // a non-tensor argument as Python writes it ("False", "(1, 2)", ":12"); null for a tensor
  producer: string | null; // a tensor: the unrolled id of the node that produced it
  output: number; // which output of the producer
  shape: string | null; // a tensor's shape ("2x12x32")
  default: boolean; // not passed: the function's default
}

/** Where an op's NaN/Inf goes: on to the model's output or a gradient, or masked away later
 * (T5's log(0) in its relative-position buckets). */
export type NonfiniteReach = "reaches" | "masked";

export interface OpDetailsResult {
  id: string;
  function: string; // "torch.nn.functional.scaled_dot_product_attention"; "" without a recorded call
  arguments: CallArgument[];
  statement: string; // the whole source statement that called it (several lines), "" without source
  flops: number | null;
  timeMs: number | null;
  paramCount: number;
  nonfinite: NonfiniteReach | null; // null: its saved outputs are finite (or not saved)
}

export interface ModuleParam {
  name: string; // full name, "encoder.layer.0.attention.self.query.weight"
  shape: number[];
  numel: number;
  trainable: boolean;
}

export interface ModuleDetailsResult {
  address: string;
  className: string;
  extraRepr: string | null; // its constructor settings ("3, 8, kernel_size=(3, 3), stride=(1, 1)"); null: no model
  parameters: ModuleParam[]; // at most 200
  nParams: number; // of all its parameters
  nOps: number;
  nPasses: number;
  flops: number | null;
  timeMs: number | null;
  bytes: number;
  outputs: string[]; // unrolled id of the node that produced its (first) output, per pass
}
