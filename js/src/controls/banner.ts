// The banner under the toolbar: a forward pass that raised (the graph is a partial trace,
// with a link to the op that failed), a graph that could not be decoded, or a layout that failed.
import { h } from "../render/dom";

export class Banner {
  readonly el = h("div", "lens-banner");

  constructor() {
    this.el.dataset.testid = "error-banner";
    this.el.hidden = true;
  }

  /** Shows the forward pass's error, or hides the banner when there is none. */
  showForwardError(error: string | null, failedOp: string | null, goToOp: (op: string) => void): void {
    this.el.hidden = !error;
    if (!error) return;
    this.el.replaceChildren(h("b", "", "Forward pass raised: "), error, " — showing the partial trace.");
    if (failedOp) {
      const link = h("button", "lens-link", failedOp);
      link.onclick = () => goToOp(failedOp);
      this.el.append(" Failed op: ", link);
    }
  }

  showGraphError(message: string): void {
    this.el.hidden = false;
    this.el.replaceChildren(h("b", "", "The graph could not be read: "), message);
  }

  showLayoutError(message: string): void {
    this.el.hidden = false;
    this.el.replaceChildren(h("b", "", "Layout failed: "), message);
  }
}
