// Modules that return their input unchanged (nn.Identity, Dropout in eval or p=0) are folded
// into the op before them (graph/visibility.ts): six of a ViT's sixteen first-screen boxes did
// nothing. The graph's footer counts those folded in view now; clicking the count opens them.
import { foldedPassThrough } from "../graph/visibility";
import type { AppHost } from "./appHost";

/** Shows the count of folded pass-through modules (none: nothing) after a layout. */
export function notePassThrough(app: AppHost): void {
  const m = app.current;
  const el = app.pane.notes;
  const folded = m ? foldedPassThrough(m, app.expanded) : [];
  if (!folded.length) {
    el.replaceChildren();
    return;
  }
  const names = [...new Set(folded.map((a) => m!.modules.get(a)?.className ?? "module"))].sort();
  const button = document.createElement("button");
  button.className = "lens-linkish";
  button.dataset.testid = "pass-through";
  button.textContent = `${folded.length} ${names.join("/")} module${folded.length === 1 ? "" : "s"} that return their input folded · show`;
  button.title = folded.join("\n");
  button.onclick = () => app.setExpanded(new Set([...app.expanded, ...folded]));
  el.replaceChildren(" · ", button);
}
