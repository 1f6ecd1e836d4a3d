// The banner of a backward pass that raised (a second backward through freed tensors, an
// in-place change of a tensor saved for backward, a NaN check): its message, the forward op
// whose saved tensors were involved (a link that selects it) and which pass freed them.
import type { BackwardPassInfo } from "../graph/protocol";
import { h } from "../render/dom";

export class BackwardBanner {
  readonly el = h("div", "lens-banner");

  constructor() {
    this.el.dataset.testid = "backward-banner";
    this.el.hidden = true;
  }

  /** Shows the passes that raised (none: hidden); `goToOp` selects a forward op by unrolled id. */
  show(failed: BackwardPassInfo[], goToOp: (op: string) => void): void {
    this.el.hidden = failed.length === 0;
    this.el.replaceChildren();
    for (const p of failed) {
      const line = h("div", "");
      const firstLine = (p.error ?? "").split("\n")[0];
      line.append(h("b", "", `Backward pass ${p.index} raised: `), firstLine);
      if (p.errorOp) {
        const op = p.errorOp;
        const link = h("button", "lens-link", op);
        link.dataset.testid = "backward-error-op";
        link.title = "Select the forward op whose saved tensors were involved";
        link.onclick = () => goToOp(op);
        line.append(" — forward op involved: ", link);
        if (p.errorSource) line.append(h("span", "lens-mono", ` ${p.errorSource}`));
      }
      if (p.freedBy !== null) line.append(`; its saved tensors were freed by backward pass ${p.freedBy}`);
      this.el.append(line);
    }
  }
}
