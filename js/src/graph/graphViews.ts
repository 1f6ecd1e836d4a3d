// The two views of one graph payload (unrolled, rolled), each built on first use.
import type { GraphPayload, ViewName } from "./protocol";
import { buildModel, counterpartId, type GraphModel } from "./tree";
import { groupIsOpen } from "./visibility";

export class GraphViews {
  private built: Partial<Record<ViewName, GraphModel>> = {};

  constructor(readonly payload: GraphPayload) {}

  get(view: ViewName): GraphModel {
    let m = this.built[view];
    if (!m) {
      m = buildModel(this.payload, view);
      this.built[view] = m;
    }
    return m;
  }

  /** The node of view `to` that stands for `id` of view `from` (a layer for a pass, the first pass for a layer). */
  counterpart(id: string, from: ViewName, to: ViewName): string {
    return counterpartId(id, this.get(from), this.get(to));
  }

  /**
   * The unrolled stacks to open on a switch from the rolled view: those whose first block is
   * open there (itself, or through a twin), so the block open in one view is open in the other.
   */
  stacksToOpen(expanded: ReadonlySet<string>): string[] {
    const rolled = this.get("rolled");
    const out: string[] = [];
    for (const g of this.get("unrolled").groups.values())
      if (g.kind === "stack" && !expanded.has(g.key) && groupIsOpen(rolled, g.members[0], expanded)) out.push(g.key);
    return out;
  }
}
