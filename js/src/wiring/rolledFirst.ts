// A recurrent model whose unrolled first view does not fit opens rolled instead, with a hint
// saying why and the way back (graph/firstViewChoice.ts decides; controls/viewHint.ts shows it).
// Split out of app.ts, whose first-view search calls it once the search has run out.
import { expansionLevels, growCandidates } from "../graph/defaultExpansion";
import { opensRolled, rolledHint } from "../graph/firstViewChoice";
import { type Rect, SizeCache } from "../layout/scenePlan";
import { FitSearch, wholeScale } from "../render/camera";
import type { AppHost } from "./appHost";

/**
 * A recurrent model whose unrolled first view does not fit opens rolled (firstViewChoice.ts),
 * with a hint saying why; the view goes to the kernel (`w.view`). False: it stays unrolled.
 */
export function openRolledInstead(app: AppHost, bounds: Rect): boolean {
  const payload = app.views?.payload;
  const r = app.renderer;
  if (!payload || app.viewName !== "unrolled" || !opensRolled(payload, wholeScale(bounds, r.width, r.height)))
    return false;
  const rolled = app.getModel("rolled");
  if (!rolled) return false;
  app.viewHint.show(rolledHint(payload), () => app.setView("unrolled", "user"));
  const { levels, lowest } = expansionLevels(rolled, app.showParams);
  app.store.update({
    view: "rolled",
    expanded: new Set(levels[levels.length - 1]),
    camera: { kind: "search", search: new FitSearch(levels, lowest, growCandidates(rolled)) },
  });
  app.sync.writeView("rolled");
  app.sizes = new SizeCache(rolled, app.metrics);
  app.vis = null;
  app.refresh();
  return true;
}
