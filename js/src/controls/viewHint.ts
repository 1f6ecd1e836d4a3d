// The note over a graph opened in the rolled view because it is recurrent (graph/firstViewChoice.ts):
// why, and a button back to the unrolled view. Hidden once the user switches views.
import { h } from "../render/dom";

export class ViewHint {
  readonly el = h("div", "lens-banner lens-view-hint");

  constructor() {
    this.el.dataset.testid = "view-hint";
    this.el.hidden = true;
  }

  show(text: string, showUnrolled: () => void): void {
    const button = h("button", "lens-btn", "Show unrolled");
    button.dataset.testid = "view-hint-unrolled";
    button.onclick = () => {
      this.hide();
      showUnrolled();
    };
    this.el.replaceChildren(text, " ", button);
    this.el.hidden = false;
  }

  hide(): void {
    this.el.hidden = true;
  }
}
