// The standalone HTML page's entry (lens_widget/widget/html_export.py): the widget over the
// traits and activation views saved in the page, with no kernel and no network.
import { LensApp } from "./app";
import type { KernelLink } from "./kernel/kernelLink";
import { readPage } from "./kernel/offline";

/** Shows the page's graph in `el` (replacing its "Loading…" text). */
export async function renderPage(el: HTMLElement, doc: Document = document): Promise<LensApp> {
  const { model, store } = await readPage(doc);
  const link: KernelLink = {
    gate: store.gate,
    noRerun: "this page has no kernel: re-running the model needs the notebook",
    status: () => "",
    onChange: () => undefined,
    dispose: () => undefined,
  };
  el.replaceChildren();
  return new LensApp(model, el, { link });
}
