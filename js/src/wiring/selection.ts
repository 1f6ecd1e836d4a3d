// Selecting an op or inspecting a module: the inspector shows it, the modules around it open,
// and the camera goes to it. Split out of app.ts, which wires these to the toolbar, the canvas
// and the kernel's `selected` trait.
import type { SelectAs } from "../controls/gradientControl";
import type { SearchHit } from "../graph/search";
import { closedAbove, closedAround, GROUP_PREFIX, type Visible } from "../graph/visibility";
import { resolveSelection } from "../kernel/traitSync";
import type { AppHost, SelectOptions } from "./appHost";
import { keepCamera } from "./cameraMoves";

export function select(app: AppHost, id: string, opts: SelectOptions): void {
  const m = app.current;
  if (!m) return;
  const next = resolveSelection(id, m.nodes.has(id), opts.origin ?? "user");
  if (!next) return;
  id = next.id;
  app.store.update({ selected: id });
  app.renderer.selectedBox = null; // an op, or nothing: no module inspected
  if (next.write) app.sync.writeSelected(id);
  app.inspector.show(m, id || null);
  const focus = (): void => {
    if (app.renderer.focusNode(id, !!opts.center)) keepCamera(app);
  };
  const need = id ? closedAround(m, id, app.expanded) : [];
  if (need.length) app.setExpanded(new Set([...app.expanded, ...need]), focus);
  else if (!app.vis || app.vis !== app.renderer.frame?.vis) app.refresh(focus);
  else focus();
}

/** Selects a node by its unrolled id in the view shown: a leaf showing parameters if hidden, an op plotting its gradient. */
export function selectUnrolled(app: AppHost, id: string, as: SelectAs = "node"): void {
  if (as === "gradient") app.inspector.showGradient(id);
  if (as === "leaf" && app.toolbar.revealParams()) app.vis = null; // lay out again, with the parameters
  app.select(app.mapId(id, "unrolled", app.viewName), { center: true });
}

function focusGroup(app: AppHost, key: string): void {
  const m = app.current;
  if (!m) return;
  const need = closedAbove(m, key, app.expanded);
  const focus = (): void => {
    if (app.renderer.focusGroup(key)) keepCamera(app);
  };
  if (need.length) app.setExpanded(new Set([...app.expanded, ...need]), focus);
  else focus();
}

/** A search hit chosen: an op is selected, a module comes into view with its inspector. */
export function jump(app: AppHost, hit: SearchHit): void {
  if (hit.kind === "node") return app.select(hit.id, { center: true });
  app.select("", {}); // a module, not the op shown before: its own inspector follows
  focusGroup(app, hit.id);
  inspectGroup(app, hit.id);
}

/** The module inspector of group `key` (a module's box or title was clicked, or found). */
export function inspectGroup(app: AppHost, key: string): void {
  const m = app.current;
  const g = m?.groups.get(key);
  if (!m || !g) return;
  // a ×N stack of identical blocks: the first block's facts, saying it stands for all
  const stack = g.kind === "stack" && g.members.length > 0;
  if (g.kind !== "module" && !stack) return;
  if (app.selected) app.select("", {});
  const shown = stack
    ? { address: g.members[0], pass: null, note: `the first of ${g.members.length} blocks folded here` }
    : { address: g.address, pass: g.pass };
  const opening = app.inspector.el.hidden;
  app.inspector.showModule(m, { ...shown, key }, g.className);
  // the graph narrows beside it with the layout this click started (toggleGroup), placed with
  // its hold and reveal in the narrower canvas; with the layout done already (cached), narrows
  // now, and what opened comes into view there
  if (opening && app.pane.narrowBeside()) app.renderer.reveal(key);
  app.renderer.selected = app.vis ? inspectedBox(app, app.vis) : null;
  app.renderer.selectedBox = key;
  app.renderer.request();
}

/** The collapsed module whose inspector is open, marked as a selected node is; null when
 * none is, or it is open (its box is drawn as it was). */
export function inspectedBox(app: AppHost, vis: Visible): string | null {
  const key = app.inspector.moduleShown?.key;
  return key && vis.itemById.has(GROUP_PREFIX + key) ? GROUP_PREFIX + key : null;
}
