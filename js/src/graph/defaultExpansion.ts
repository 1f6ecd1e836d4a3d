// Picks the expansion a graph opens with: expand whole levels of the module tree,
// outermost first, while the number of visible items stays readable. Stacks of repeated
// blocks, output groups and function groups (a mask builder's plumbing) stay closed: they are
// what keeps a large model on one screen, the model's own modules first.
// Chunks of a huge box (model/chunks.ts) open like modules.
import { type GraphModel, ROOT } from "./tree";
import { countVisible } from "./visibility";

export const DEFAULT_MAX_VISIBLE = 150;
const HANDFUL = 3;

export interface Levels {
  levels: string[][]; // shallowest first: nothing open, then each level of the tree added; the last is the default
  lowest: number; // the first level that shows more than a handful of items
}

/** The expansions a first view may open with (see render/camera.ts FitSearch). */
export function expansionLevels(
  model: GraphModel,
  showParams: boolean,
  maxVisible: number = DEFAULT_MAX_VISIBLE,
): Levels {
  const opens = (key: string): boolean => {
    const g = model.groups.get(key)!;
    // a module returning its input stays folded (visibility.ts): opening it is showing it
    return (g.kind === "module" && !model.modules.get(g.address)?.passThrough) || g.kind === "chunk";
  };
  const expanded = new Set<string>();
  const levels: string[][] = [[]];
  let count = countVisible(model, { expanded, showParams });
  let lowest = count > HANDFUL ? 0 : -1;
  let level = model.groups.get(ROOT)!.childGroups.filter(opens);
  while (level.length > 0) {
    const trial = new Set(expanded);
    for (const k of level) trial.add(model.groups.get(k)!.address);
    const n = countVisible(model, { expanded: trial, showParams });
    // a handful of boxes says nothing: open one level even past the limit then
    if (n > maxVisible && count > HANDFUL) break;
    for (const a of trial) expanded.add(a);
    levels.push([...expanded]);
    count = n;
    if (lowest < 0 && n > HANDFUL) lowest = levels.length - 1;
    if (n > maxVisible) break;
    level = level.flatMap((k) => model.groups.get(k)!.childGroups).filter(opens);
  }
  return { levels, lowest: lowest < 0 ? levels.length - 1 : lowest };
}

export function defaultExpansion(
  model: GraphModel,
  showParams: boolean,
  maxVisible: number = DEFAULT_MAX_VISIBLE,
): string[] {
  const { levels } = expansionLevels(model, showParams, maxVisible);
  return levels[levels.length - 1];
}

/** The modules a first view of `expansion` may open next (render/camera.ts FitSearch grows
 * it): closed modules (not stacks, outputs or functions) of more than one op whose box is
 * shown, biggest first. */
export function growCandidates(model: GraphModel): (expansion: string[]) => string[] {
  return (expansion) => {
    const open = new Set(expansion);
    const ops = new Map<string, number>();
    for (const g of model.groups.values()) {
      if (g.key === ROOT || (g.kind !== "module" && g.kind !== "chunk") || open.has(g.address) || g.nOps < 2) continue;
      const parent = g.parent === null ? undefined : model.groups.get(g.parent);
      const shown = !parent || parent.key === ROOT || open.has(parent.address);
      if (shown) ops.set(g.address, (ops.get(g.address) ?? 0) + g.nOps);
    }
    return [...ops].sort((a, b) => b[1] - a[1]).map(([address]) => address);
  };
}
