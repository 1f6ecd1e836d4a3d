// Where the camera goes after a layout, as the view state's camera intent says
// (state/viewStore.ts): the first view of a graph (the expansion that fits, see FitSearch),
// the op kept in place across a view switch, a fit, or where the user left it.

import type { Visible } from "../graph/visibility";
import type { Rect, Scene } from "../layout/scenePlan";
import type { CameraIntent } from "../state/viewStore";
import { placeAnchor } from "./anchor";
import { type FitSearch, mayFitHeight } from "./camera";
import type { Renderer } from "./renderer";

/** After a first view's layout: the expansion to try next, or null once it fits (or none can). */
export function nextExpansion(
  search: FitSearch,
  bounds: Rect,
  r: Renderer,
  floorOf: (expansion: string[]) => number,
): string[] | null {
  return search.next(bounds, r.width, r.height, (e) => mayFitHeight(floorOf(e), r.height));
}

/** Puts the camera for a new layout as `intent` says (an anchor no longer shown: a fit). */
export function placeCamera(intent: CameraIntent, r: Renderer, vis: Visible, scene: Scene): void {
  // the layout changed under a kept camera: what moved may now stand across an edge
  if (intent.kind === "keep") return r.wholeTitles();
  if (intent.kind === "anchor") {
    const anchored = vis.rep.get(intent.anchor.node);
    const rect = anchored ? scene.items.get(anchored) : undefined;
    if (rect) {
      r.cam = placeAnchor(intent.anchor, rect);
      return r.wholeTitles(rect);
    }
  }
  r.fitReadable(scene.bounds);
}
