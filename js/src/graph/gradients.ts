// What a traced backward left, indexed for the views that show it (the inspector's gradient
// switch, the leaves and backward lists, the node style of leaves that got no gradient, the
// banner of a backward that raised). Pure: built once per graph payload.
import type { BackwardNodeInfo, BackwardPassInfo, GradientInfo, LeafInfo } from "./protocol";

export class Gradients {
  readonly passes: BackwardPassInfo[];
  /** Leaves, those that got no gradient first (then in the kernel's order). */
  readonly leaves: LeafInfo[];
  /** Unrolled ids of nodes that no backward pass reached. */
  readonly noGrad: ReadonlySet<string>;
  /** Unrolled ids of param/input sources that wanted a gradient and got none. */
  readonly starvedLeaves: ReadonlySet<string>;
  private nodes = new Map<string, BackwardNodeInfo>();
  private byForward = new Map<string, BackwardNodeInfo[]>();

  constructor(readonly info: GradientInfo) {
    this.passes = info.passes;
    this.leaves = [...info.leaves].sort((a, b) => Number(a.received) - Number(b.received));
    this.noGrad = new Set(info.noGrad);
    this.starvedLeaves = new Set(this.leaves.filter((l) => !l.received && l.label).map((l) => l.label!));
    for (const n of info.backward) {
      this.nodes.set(n.id, n);
      const op = n.forwardOp ?? n.withinOp;
      if (op) {
        const list = this.byForward.get(op) ?? [];
        list.push(n);
        this.byForward.set(op, list);
      }
    }
  }

  /** Passes that ran to the end and kept gradients (the gradient switch offers one of them,
   * or their sum); a pass inside a torch.func transform kept none. */
  get completedPasses(): BackwardPassInfo[] {
    return this.passes.filter((p) => p.error === null && !p.inTransform);
  }

  get failedPasses(): BackwardPassInfo[] {
    return this.passes.filter((p) => p.error !== null);
  }

  /** How many leaves wanted a gradient and got none. */
  get starvedCount(): number {
    return this.leaves.filter((l) => !l.received).length;
  }

  /** The autograd nodes a forward op created: its output's, then those of its internals
   * (F.linear: the output's view, then mm, t, view), in the order the kernel sent them. */
  backwardOf(forwardOp: string): BackwardNodeInfo[] {
    return this.byForward.get(forwardOp) ?? [];
  }

  /** The autograd nodes that ran in backward pass `index` (1-based), in execution order. */
  nodesOf(index: number): BackwardNodeInfo[] {
    const p = this.passes.find((x) => x.index === index);
    if (!p) return [];
    return p.nodes.map((id) => this.nodes.get(id)).filter((n): n is BackwardNodeInfo => !!n);
  }

  node(id: string): BackwardNodeInfo | undefined {
    return this.nodes.get(id);
  }
}

/** Gradients of a payload, or null for a log of a forward pass alone. */
export function gradientsOf(info: GradientInfo | undefined | null): Gradients | null {
  return info ? new Gradients(info) : null;
}
