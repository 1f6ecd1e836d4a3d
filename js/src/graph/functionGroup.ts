// The plain function of the model's code an op ran in (create_causal_mask(): its ops are
// boxed like a module's, kind "function"), for the op inspector to say so.
import type { NodeInfo } from "./protocol";
import type { GraphModel, GroupNode } from "./tree";

/** The innermost function group around `n`, or null when it ran in no such function. */
export function functionGroupOf(m: GraphModel, n: NodeInfo): GroupNode | null {
  for (let i = n.groups.length - 1; i >= 0; i--) {
    const g = m.groups.get(n.groups[i]);
    if (g?.kind === "function") return g;
  }
  return null;
}

/** What the op inspector's "function" row reads: the function and the module that called it. */
export function functionText(g: GroupNode): string {
  const cut = g.address.lastIndexOf(".");
  const caller = cut > 0 ? g.address.slice(0, cut) : "the model";
  return `${g.className} — a function of the model's code, called in ${caller}`;
}
