// The toolbar's actions and the synced traits, wired to the controller: what the user asks of the
// toolbar, and what the kernel changes, applied to the view state (traitSync.ts's echo rules).
// Kept out of app.ts (the composition root).
import { Toolbar } from "../controls/toolbar";
import type { GraphPayload } from "../graph/protocol";
import { search } from "../graph/search";
import { TraitSync } from "../kernel/traitSync";
import type { WidgetModel } from "../kernel/widgetModel";
import { downloadViewSvg } from "../render/svgExport";
import { FIT } from "../state/viewStore";
import type { AppHost } from "./appHost";
import { collapseAll, expandAll } from "./cameraMoves";
import { jump } from "./selection";

export function createToolbar(app: AppHost): Toolbar {
  return new Toolbar({
    fit: () => app.pane.fit(),
    expandAll: () => expandAll(app),
    collapseAll: () => collapseAll(app),
    setView: (view) => app.setView(view, "user"),
    showShapes: (on) => app.pane.showShapes(on),
    showParams: (on) => {
      app.store.update({ showParams: on });
      app.refresh();
    },
    exportSvg: () => {
      // what the canvas shows now, as an SVG
      const title = `${app.views?.payload.modelClass ?? "graph"} (${app.viewName})`;
      downloadViewSvg(app.renderer, app.theme, title, app.root);
    },
    search: (query) => (app.current ? search(app.current, query, 30, app.showParams) : []),
    jump: (hit) => jump(app, hit),
  });
}

/** What the traits hand to the controller itself: a graph, a graph that failed, a status line. */
export interface TraitHandlers {
  graph(payload: GraphPayload | null, initial: boolean): void;
  graphError(message: string): void;
  status(text: string): void;
}

/** The synced traits, read once into the view state, then followed. */
export function syncTraits(app: AppHost, model: WidgetModel, on: TraitHandlers): TraitSync {
  const sync = new TraitSync(model, () => ({ view: app.viewName, selected: app.selected, expanded: app.expanded }), {
    ...on,
    view: (view) => app.setView(view, "kernel"),
    selected: (id) => app.select(id, { center: true, origin: "kernel" }),
    expanded: (next) => {
      // the kernel chose what is open: a first view's search for what fits is over
      app.store.update({ expanded: next, camera: app.store.search ? FIT : app.store.state.camera });
      app.refresh();
    },
  });
  const { view, expanded, selected } = sync;
  app.store.update({ view, expanded, selected });
  return sync;
}
