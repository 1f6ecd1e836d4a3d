// What the renderer draws (a Frame: one laid-out view) and what each drawing pass is given.

import type { GraphModel } from "../graph/tree";
import type { Visible } from "../graph/visibility";
import type { EdgeGeom } from "../layout/edges";
import type { Rect, Scene } from "../layout/scenePlan";
import type { DeviceShare } from "./deviceOverlay";
import type { Theme } from "./theme";

export interface Frame {
  model: GraphModel;
  vis: Visible;
  scene: Scene;
  edges: EdgeGeom[];
}

/** Metric overlay colors and NaN/Inf marks of items (controls/overlayControl.ts). */
export interface NodeOverlay {
  fill(itemId: string): string | null; // null: the kind's color
  shares(itemId: string): readonly DeviceShare[] | null; // device overlay, a mixed item: the bar of each device's share
  flagged(itemId: string): boolean; // an output holds NaN/Inf
  quietFlag?(itemId: string): boolean; // ... that is masked away later: a quieter mark
  gradFlagged(itemId: string): boolean; // a gradient holds NaN/Inf
  starved(itemId: string): boolean; // a leaf (or an op's parameter) that got no gradient
}

/** One draw call's settings, shared by the passes (boxes, edges, nodes). */
export interface Paint {
  ctx: CanvasRenderingContext2D;
  theme: Theme;
  frame: Frame;
  selected: string | null; // item id
  selectedBox: string | null; // the open module whose inspector is shown (group key)
  hover: string | null; // item id, or "@" + group key
  showShapes: boolean; // tensor shapes on edges
  labels: boolean; // zoomed in far enough for text
  detail: boolean; // zoomed in far enough for outlines and arrow heads
  px: number; // one screen pixel in world units
  overlay: NodeOverlay | null;
  inView(r: Rect): boolean;
}
