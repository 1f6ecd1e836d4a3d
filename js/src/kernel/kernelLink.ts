// Whether the widget can reach a kernel, and what to say when it cannot. The graph never needs
// one (it is in the widget's state, saved with the notebook); activations and re-runs do.
// ipywidgets marks the view of a model without a live comm with DISCONNECTED_CLASS: a notebook
// reopened without its kernel (or with a new one), nbconvert's HTML. A kernel restarted under
// a live view is not marked: the first request finds the comm gone (`lost`).
import type { Request } from "../graph/protocol";
import type { RequestGate } from "./messages";

export const DISCONNECTED_CLASS = "jupyter-widgets-disconnected";

export interface KernelLink {
  /** Why a request cannot be answered (then it is not sent), or null. */
  readonly gate: RequestGate;
  /** What the toolbar says about the link: "" when requests are answered. */
  status(): string;
  /** Why the model can never be re-run through this link (a saved page); absent when it can. */
  readonly noRerun?: string;
  /** Calls `listener` when the link changes (a kernel goes away). */
  onChange(listener: () => void): void;
  /** A request could not even be sent (the kernel restarted under a live view, which
   * ipywidgets does not mark): say so from now on, as for a disconnected view. */
  lost?(): void;
  dispose(): void;
}

const NEEDS: Record<string, string> = {
  activation: "activations need",
  attention: "attention maps need",
  rerun: "re-running the model needs",
  ablate: "ablating (re-running the model) needs",
};

/** The answer to a request when no kernel runs: what needs one, and how to get one. */
export function needsKernel(req: Pick<Request, "method"> & { params?: object }): string {
  const grad = req.method === "activation" && !!req.params && "value" in req.params && req.params.value === "grad";
  return `${grad ? "gradients need" : (NEEDS[req.method] ?? "this needs")} a running kernel: re-run the cell`;
}

/** Whether ipywidgets has marked `el` (a widget view's element) as disconnected from its kernel. */
export function isDisconnected(el: Element): boolean {
  return el.classList.contains(DISCONNECTED_CLASS);
}

/** The link of a widget view in Jupyter (or in any anywidget host): watches `el`'s class. */
export function notebookLink(el: HTMLElement): KernelLink {
  const listeners: (() => void)[] = [];
  const observer =
    typeof MutationObserver === "function" ? new MutationObserver(() => listeners.forEach((f) => f())) : null;
  observer?.observe(el, { attributes: true, attributeFilter: ["class"] });
  let lost = false;
  const gone = (): boolean => lost || isDisconnected(el);
  return {
    gate: (req) => (gone() ? needsKernel(req) : null),
    status: () => (gone() ? "no kernel: graph only" : ""),
    onChange: (listener) => listeners.push(listener),
    lost: () => {
      if (lost) return;
      lost = true;
      listeners.forEach((f) => f());
    },
    dispose: () => observer?.disconnect(),
  };
}
