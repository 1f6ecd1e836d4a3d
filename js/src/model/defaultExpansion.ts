// Picks the expansion a graph opens with: expand whole levels of the module tree,
// outermost first, while the number of visible items stays readable.
import { type GraphModel, ROOT } from "./tree";
import { computeVisible } from "./visibility";

export const DEFAULT_MAX_VISIBLE = 150;

export function defaultExpansion(
  model: GraphModel,
  showParams: boolean,
  maxVisible: number = DEFAULT_MAX_VISIBLE,
): string[] {
  const expanded = new Set<string>();
  let count = computeVisible(model, { expanded, showParams }).items.length;
  let level = model.groups.get(ROOT)!.childGroups;
  while (level.length > 0) {
    const trial = new Set(expanded);
    for (const k of level) trial.add(model.groups.get(k)!.address);
    const n = computeVisible(model, { expanded: trial, showParams }).items.length;
    // a handful of boxes says nothing: open one level even past the limit then
    if (n > maxVisible && count > 3) break;
    for (const a of trial) expanded.add(a);
    count = n;
    if (n > maxVisible) break;
    level = level.flatMap((k) => model.groups.get(k)!.childGroups);
  }
  return [...expanded];
}
