// Switching between the unrolled and rolled views: the selection and the camera's anchor are
// carried over to their counterparts, a block open in one view opens in the other. Split out of
// app.ts, which calls it for the toolbar's switch and the kernel's `view` trait.
import type { ViewName } from "../graph/protocol";
import { type Origin, selectionAfterSwitch } from "../kernel/traitSync";
import { SizeCache } from "../layout/scenePlan";
import { pickAnchor } from "../render/anchor";
import { FIT } from "../state/viewStore";
import type { AppHost } from "./appHost";

export function switchView(app: AppHost, view: ViewName, origin: Origin): void {
  if (view === app.viewName) return;
  app.viewHint.hide(); // the view is the user's (or the kernel's) choice now
  const f = app.renderer.frame;
  const r = app.renderer;
  const anchor = f && !app.store.search ? pickAnchor(f, r.cam, r.width, r.height, r.selected) : null;
  const from = app.viewName;
  const kernelSelected = origin === "kernel" ? app.sync.selected : "";
  const kernelInView = !!kernelSelected && !!app.getModel(view)?.nodes.has(kernelSelected);
  // the op inspected goes to the pass its inspector shows, not to the layer's first pass
  const shown = app.selected && app.selected === app.inspector.nodeId ? app.inspector.shownPass : null;
  const mapSel = (id: string): string =>
    id === app.selected && shown && view === "unrolled" ? shown : app.mapId(id, from, view);
  const sel = selectionAfterSwitch(mapSel(app.selected), kernelSelected, kernelInView, origin);
  app.store.update({ view });
  app.trail.clear();
  if (origin === "user") app.sync.writeView(view);
  const m = app.current;
  if (!m) return;
  app.sizes = new SizeCache(m, app.metrics);
  // a block open in the rolled view shows in the unrolled one: open the stack that holds it
  const stacks = view === "unrolled" ? (app.views?.stacksToOpen(app.expanded) ?? []) : [];
  if (stacks.length) {
    app.store.update({ expanded: new Set([...app.expanded, ...stacks]) });
    app.sync.writeExpanded(app.expanded);
  }
  // a first view still looking for what fits goes on looking in the new view
  if (!app.store.search) {
    app.store.update({
      camera: anchor ? { kind: "anchor", anchor: { ...anchor, node: mapSel(anchor.node) } } : FIT,
    });
  }
  const anchored = app.store.state.camera.kind === "anchor";
  app.store.update({ selected: "" });
  app.vis = null; // the other view's visible set: select() must lay out the new view
  // the switched-to selection is written even when the kernel switched: it may be a mapped id the kernel lacks
  if (sel) app.select(sel, { center: !anchored });
  else {
    app.inspector.show(m, null);
    if (origin === "user") app.sync.writeSelected("");
    app.refresh();
  }
}
