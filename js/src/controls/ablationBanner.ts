// The banner of an ablation's comparison: what was ablated, how to read the graph, and the
// way back to the plain trace ("back to the trace").
import type { AblationInfo } from "../graph/protocol";
import { h } from "../render/dom";

export class AblationBanner {
  readonly el = h("div", "lens-banner lens-ablation-banner");
  private back = h("button", "lens-btn", "back to the trace");
  private note = h("span", "lens-muted");

  constructor(endAblation: () => Promise<void>) {
    this.el.dataset.testid = "ablation-banner";
    this.el.hidden = true;
    this.back.dataset.testid = "ablation-back";
    this.back.onclick = () => {
      this.back.disabled = true;
      this.note.textContent = " going back…";
      endAblation().then(
        () => (this.note.textContent = ""),
        (e: Error) => {
          this.back.disabled = false;
          this.note.textContent = ` could not go back: ${e.message}`;
        },
      );
    };
  }

  /** Shows the ablation of the graph now shown, or hides the banner when there is none. */
  show(info: AblationInfo | undefined): void {
    this.el.hidden = !info;
    if (!info) return;
    this.back.disabled = false;
    this.note.textContent = "";
    const what = h("span", "");
    what.dataset.testid = "ablation-text";
    what.textContent = `Ablated: ${info.text}.`;
    this.el.replaceChildren(
      what,
      " Colored by the difference clean (A) vs ablated (B); ops before it do not change. ",
      this.back,
      this.note,
    );
  }
}
