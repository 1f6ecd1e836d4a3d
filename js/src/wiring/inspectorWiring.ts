// The inspector built with what it asks of the rest of the widget: the kernel's answers, the
// overlay's side in a comparison, the unrolled model, and the way back to selecting in the graph.
// Kept out of app.ts so the controller stays a composition root.
import { SOURCE_KINDS } from "../graph/tree";
import { Inspector } from "../panel/inspector";
import type { AppHost } from "./appHost";

export function createInspector(app: AppHost): Inspector {
  return new Inspector({
    theme: () => app.theme,
    select: (id) => app.select(id, { center: true }),
    close: () => app.select("", {}),
    // in a comparison the overlay bar picks the side plotted: A, B or A−B
    fetchActivation: (p, onSlow) =>
      app.requests.activation(
        app.overlay.inCompare && p.value !== "grad" ? { ...p, side: app.overlay.side } : p,
        onSlow,
      ),
    fetchAttention: (p, onSlow) => app.requests.attention(p, onSlow),
    rerun: (id, onWaiting) => app.requests.rerun(id, onWaiting),
    noRerun: () => app.link.noRerun ?? app.views?.payload.noRerun ?? null,
    ablate: (p, onWaiting) => app.requests.ablate(p, onWaiting),
    unrolledNode: (id) => app.getModel("unrolled")?.nodes.get(id),
    unrolledParents: (id) => app.getModel("unrolled")?.parents.get(id) ?? [],
    gradients: () => app.grads.gradients,
    noSide: (id) => app.overlay.noSide(id),
    sideLabel: () => app.overlay.sideLabel,
    fetchOpDetails: (id) => app.requests.opDetails(id),
    fetchModuleDetails: (address) => app.requests.moduleDetails(address),
    // a parameter (a call's weight) is shown first where parameters are hidden
    selectUnrolled: (id) => {
      const kind = app.getModel("unrolled")?.nodes.get(id)?.kind ?? "";
      app.selectUnrolled(id, SOURCE_KINDS.has(kind) ? "leaf" : "node");
    },
  });
}
