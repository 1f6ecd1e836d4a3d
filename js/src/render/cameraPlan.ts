// Where the camera goes after a layout: the first view of a graph (the expansion that fits,
// see FitSearch), the op kept in place across a view switch, or where the user left it.

import type { Visible } from "../graph/visibility";
import type { Rect, Scene } from "../layout/scenePlan";
import { type Anchor, placeAnchor } from "./anchor";
import { type FitSearch, mayFitHeight } from "./camera";
import type { Renderer } from "./renderer";

export class CameraPlan {
  fitNext = true; // fit the camera on the next layout
  search: FitSearch | null = null; // a first view looking for the expansion that fits
  anchor: Anchor | null = null; // after a view switch: what keeps its place on screen

  /** After a first view's layout: the expansion to try next, or null once it fits (or none can). */
  nextExpansion(bounds: Rect, r: Renderer, floorOf: (expansion: string[]) => number): string[] | null {
    if (!this.search) return null;
    const next = this.search.next(bounds, r.width, r.height, (e) => mayFitHeight(floorOf(e), r.height));
    if (!next) this.search = null;
    return next;
  }

  /** Puts the camera for a new layout, then forgets the plan. */
  place(r: Renderer, vis: Visible, scene: Scene): void {
    const anchored = this.anchor && vis.rep.get(this.anchor.node);
    const rect = anchored ? scene.items.get(anchored) : undefined;
    if (this.anchor && rect) r.cam = placeAnchor(this.anchor, rect);
    else if (this.fitNext || this.anchor) r.fitReadable(scene.bounds);
    this.fitNext = false;
    this.anchor = null;
  }
}
