// Everything a log with gradients adds around the graph: the "backward" button (in the overlay
// bar) opening the panel of leaves and autograd nodes, and the banner of a backward that
// raised. A log of a forward pass alone shows none of it.
import { type Gradients, gradientsOf } from "../graph/gradients";
import type { GraphPayload } from "../graph/protocol";
import { GradientPanel } from "../panel/gradientPanel";
import { h } from "../render/dom";
import { BackwardBanner } from "./backwardBanner";

/** How to select a node: as is, as a leaf (showing parameters if hidden), or plotting its gradient. */
export type SelectAs = "node" | "leaf" | "gradient";
/** Selects a node by its unrolled id, in whatever view is shown. */
export type SelectUnrolled = (id: string, as: SelectAs) => void;

export class GradientControl {
  readonly panel: GradientPanel;
  readonly banner = new BackwardBanner();
  readonly button = h("button", "lens-btn", "backward");
  gradients: Gradients | null = null;

  constructor(private select: SelectUnrolled) {
    this.panel = new GradientPanel({
      selectLeaf: (id) => select(id, "leaf"),
      inspectGradient: (id) => select(id, "gradient"),
    });
    this.button.dataset.testid = "toggle-backward";
    this.button.title = "The autograd leaves (which got a gradient) and the backward nodes that ran";
    this.button.hidden = true;
    this.button.onclick = () => {
      this.panel.toggle();
      this.button.setAttribute("aria-pressed", String(this.panel.open));
    };
  }

  /** A new graph: its gradients (null without a traced backward), also returned. */
  setGraph(payload: GraphPayload | null): Gradients | null {
    const g = gradientsOf(payload?.gradients);
    this.gradients = g;
    this.panel.setGradients(g);
    this.button.hidden = !g;
    const starved = g?.starvedCount ?? 0;
    this.button.textContent = starved ? `backward (${starved} without gradient)` : "backward";
    this.button.classList.toggle("lens-btn-warn", starved > 0);
    this.button.setAttribute("aria-pressed", String(this.panel.open));
    this.banner.show(g?.failedPasses ?? [], (op) => this.select(op, "node"));
    return g;
  }
}
