// The inspector's first line: what is shown (an op's kind, or "module") and its name, with
// the close button.
import { h } from "../render/dom";

/** `kind` names the badge and its colour class (lens-kind-op, lens-kind-module); `name` is
 * the title element, which may carry a test id of its own. */
export function inspectorHead(kind: string, name: HTMLElement, onClose: () => void): HTMLElement {
  const head = h("div", "lens-insp-head");
  const title = h("div", "lens-insp-title");
  title.append(h("span", `lens-kind lens-kind-${kind}`, kind), name);
  const close = h("button", "lens-icon-btn", "×");
  close.title = "Close";
  close.dataset.testid = "inspector-close";
  close.onclick = () => onClose();
  head.append(title, close);
  return head;
}
