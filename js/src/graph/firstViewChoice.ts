// Which view a graph opens on. A recurrent model (a layer whose later pass reads its earlier
// one: an RNN cell stepped in a loop) unrolled is a fan of its steps, too wide or tall to read
// with its input and output on one screen; rolled, each layer is one node and the loop one
// edge back. So when the unrolled first view would not fit at a zoom read without effort, it
// opens rolled, saying why.
import { FIRST_READ_SCALE } from "../render/camera";
import type { GraphPayload } from "./protocol";

/** Whether a graph whose unrolled first view fits at `unrolledScale` opens rolled instead. */
export function opensRolled(payload: GraphPayload, unrolledScale: number): boolean {
  return (payload.recurrentLayers?.length ?? 0) > 0 && unrolledScale < FIRST_READ_SCALE;
}

/** The hint shown over a recurrent model opened rolled: what recurs, and why not unrolled. */
export function rolledHint(payload: GraphPayload): string {
  const layers = payload.recurrentLayers ?? [];
  const byId = new Map(payload.rolled.nodes.map((n) => [n.id, n]));
  const first = byId.get(layers[0] ?? "");
  const what = first ? `${first.func}${first.module ? ` in ${first.module}` : ""}` : "a layer";
  const steps =
    first && first.nPasses > 1 ? ` runs ${first.nPasses} times, each pass reading the one before` : " recurs";
  return (
    `Rolled view: ${payload.modelClass} is recurrent (${what}${steps}); unrolled, its steps do not fit on ` +
    "one screen at a readable size. Here each layer is one node with its passes (×N); Unrolled shows every step."
  );
}
