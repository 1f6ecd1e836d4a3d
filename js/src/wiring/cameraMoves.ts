// Opening and closing modules with the camera following: a clicked module stays where it was on
// screen, closing it returns the camera to where it was before it opened (render/cameraTrail.ts),
// and opening or closing everything fits the graph. Kept beside, not in, the controller (app.ts).
import { openedDown } from "../graph/dive";
import { allGroups, toggledGroup } from "../graph/visibility";
import { FIT, KEEP } from "../state/viewStore";
import type { AppHost } from "./appHost";

export function toggleGroup(app: AppHost, key: string, expand: boolean): void {
  const next = app.current && toggledGroup(app.current, key, expand, app.expanded);
  if (!next) return;
  // the clicked module stays where it was on screen, then what opened comes into view;
  // closing it returns to where the camera was before it opened
  const hold = app.renderer.holdOnScreen(key);
  const back = expand ? null : app.trail.closed(key);
  if (expand) app.trail.opened(key, app.renderer.cam);
  app.setExpanded(next, () => {
    if (back) app.renderer.cam = back;
    else hold();
    app.renderer.reveal(key);
  });
}

/** A double click on a module: it opens down to its first block's contents (graph/dive.ts),
 * the clicked module held where it was, then what opened brought into view. */
export function openDown(app: AppHost, key: string): void {
  const next = app.current && openedDown(app.current, key, app.expanded);
  if (!next) return;
  const hold = app.renderer.holdOnScreen(key);
  app.setExpanded(next, () => {
    hold();
    app.renderer.reveal(key);
  });
}

export function expandAll(app: AppHost): void {
  if (!app.current) return;
  app.trail.clear();
  fitNext(app);
  app.setExpanded(allGroups(app.current));
}

export function collapseAll(app: AppHost): void {
  app.trail.clear();
  fitNext(app);
  app.setExpanded(new Set());
}

/** The next layout fits the graph on screen (a first view's search already ends in a fit). */
function fitNext(app: AppHost): void {
  if (!app.store.search) app.store.update({ camera: FIT });
}

/** The camera moved to what the user asked for: the next layout leaves it there. */
export function keepCamera(app: AppHost): void {
  if (app.store.state.camera.kind === "fit") app.store.update({ camera: KEEP });
}
