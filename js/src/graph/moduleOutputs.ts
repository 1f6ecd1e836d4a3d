// What a module returned, from the payload's one list (ModuleInfo.outputs): the box's shape
// line, its tooltip and the module inspector's list of outputs are all read from here, so
// they cannot disagree (a detector head's class logits and box deltas both, never one of them).
import type { ModuleInfo, ModuleOutputInfo } from "./protocol";

// A box's shape line lists the shapes while they fit this many characters; past it, a count.
const SHAPES_CHARS = 22;

/** The outputs of pass `pass` (1-based) of `mod`; with no pass (the rolled view, one box for
 * all passes), those every pass shares, or null when passes returned different shapes. */
export function passOutputs(mod: ModuleInfo | undefined, pass: number | null): ModuleOutputInfo[] | null {
  const all = mod?.outputs;
  if (!all?.length) return null;
  if (pass !== null) return all[pass - 1]?.length ? all[pass - 1] : null;
  const first = all[0];
  const key = (list: ModuleOutputInfo[]): string => list.map((o) => `${o.path}:${o.shape?.join("x")}`).join(",");
  const same = all.every((list) => key(list) === key(first));
  return same && first.length ? first : null;
}

function shapeOf(shape: number[] | null): string {
  if (!shape) return "?";
  return shape.length === 0 ? "scalar" : shape.join("×");
}

/** An output's name: its path in the value returned ("boxes", "0"), "output" for a lone tensor. */
export function outputName(o: ModuleOutputInfo): string {
  return o.path || "output";
}

/** The box's shape line: "150×20" for one output, "150×5, 150×20" for a few, "5 outputs" past
 * what a box holds. */
export function outputsShapeText(outputs: readonly ModuleOutputInfo[]): string {
  if (outputs.length === 1) return shapeOf(outputs[0].shape);
  const listed = outputs.map((o) => shapeOf(o.shape)).join(", ");
  return listed.length <= SHAPES_CHARS ? listed : `${outputs.length} outputs`;
}

/** The tooltip's whole list, each named: "0 150×5, 1 150×20"; "boxes 10×4, labels 10". */
export function outputsNamedText(outputs: readonly ModuleOutputInfo[]): string {
  if (outputs.length === 1) return shapeOf(outputs[0].shape);
  return outputs.map((o) => `${outputName(o)} ${shapeOf(o.shape)}`).join(", ");
}
