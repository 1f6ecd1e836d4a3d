// A new graph from the kernel (or another rank's log): the views rebuilt, the components told,
// the selection kept where the new graph has it, and a first graph opened on the expansion that
// fits. Kept out of app.ts (the composition root).
import type { AblationBanner } from "../controls/ablationBanner";
import type { Banner } from "../controls/banner";
import { expansionLevels, growCandidates } from "../graph/defaultExpansion";
import { GraphViews } from "../graph/graphViews";
import type { GraphPayload } from "../graph/protocol";
import { SizeCache } from "../layout/scenePlan";
import { sameRankGraph } from "../ranks/rankLogic";
import type { RankPicker } from "../ranks/rankPicker";
import { FitSearch } from "../render/camera";
import { FIT, KEEP } from "../state/viewStore";
import type { AppHost } from "./appHost";
import type { LayoutPass } from "./layoutPass";

/** What loading a graph sets beyond the AppHost: the views, and the banners and rank bar it tells. */
export interface GraphHost extends AppHost {
  views: GraphViews | null;
  readonly layout: LayoutPass;
  readonly ranks: RankPicker;
  readonly banner: Banner;
  readonly ablationBanner: AblationBanner;
}

export function showGraph(app: GraphHost, payload: GraphPayload | null, initial = false): void {
  // another rank's values on the same graph: the layout and the camera stay
  const sameLayout = sameRankGraph(app.views?.payload ?? null, payload);
  app.ranks.show(payload?.ranks);
  app.views = payload ? new GraphViews(payload) : null;
  app.trail.clear();
  app.overlay.setGraph(payload, app.grads.setGraph(payload));
  app.ablationBanner.show(payload?.ablation);
  app.layout.runner.clear();
  app.vis = null;
  app.renderer.frame = null;
  const m = app.current;
  if (!m || !payload) {
    app.toolbar.showTitle(null, 0);
    app.renderer.request();
    return;
  }
  app.sizes = new SizeCache(m, app.metrics);
  app.toolbar.showTitle(payload.modelClass, payload.nOps);
  app.banner.showForwardError(payload.error, payload.failedOp, (op) =>
    app.select(app.mapId(op, "unrolled", app.viewName), { center: true }),
  );
  const sel = app.selected && m.nodes.has(app.selected) ? app.selected : "";
  app.store.update({ camera: sameLayout ? KEEP : FIT });
  if (initial && app.expanded.size === 0) {
    const { levels, lowest } = expansionLevels(m, app.showParams);
    // with a selection the view opens on it: no need to look for a whole view
    if (!sel)
      app.store.update({ camera: { kind: "search", search: new FitSearch(levels, lowest, growCandidates(m)) } });
    app.store.update({ expanded: new Set(levels[levels.length - 1]) });
    if (sel) app.sync.writeExpanded(app.expanded);
  }
  app.store.update({ selected: "" });
  if (sel) app.select(sel, { center: !sameLayout, origin: "kernel" });
  else {
    app.inspector.show(m, null);
    app.refresh();
  }
}
