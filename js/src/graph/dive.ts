// One gesture to the op (#36): a double click on a closed module opens it and goes on down
// through what only wraps the next level — a ×N stack to its first block, a lone child module
// — so "encoder" shows layers.0's own modules, not a closed "Layer ×12" to open block by block.
import type { GraphModel, GroupNode } from "./tree";

const MAX_DEPTH = 8;

/** The expanded set with `key` open and the way down from it: each stack's first block, and
 * a group's only child group; it stops at a group with several children (a block's contents). */
export function openedDown(model: GraphModel, key: string, expanded: ReadonlySet<string>): Set<string> | null {
  let g: GroupNode | undefined = model.groups.get(key);
  if (!g) return null;
  const next = new Set(expanded);
  for (let depth = 0; g && depth < MAX_DEPTH; depth++) {
    next.add(g.address);
    const children: GroupNode[] = g.childGroups.map((k) => model.groups.get(k)!).filter((c) => c.kind !== "outputs");
    const stack: GroupNode | undefined = children.find((c) => c.kind === "stack");
    if (g.kind === "stack") g = children[0];
    else if (stack) g = stack;
    else if (children.length === 1 && children[0].kind !== "function") g = children[0];
    else break;
  }
  return next;
}
