// What each zoom shows (semantic zoom): near, every label at its own size; far out (below
// LABEL_MIN_SCALE, where node text would shrink under MIN_TEXT_PX), op labels are dropped and
// module names are drawn at a fixed screen size instead (overviewLabels.ts), so a fit of a big
// graph and the minimap still read as the model's structure.
import { SMALL_PX } from "../layout/labels";

/** No text is drawn smaller than this on screen (px). */
export const MIN_TEXT_PX = 5;
/** From this zoom up, node and module text is drawn at its own size (the smallest, SMALL_PX, at MIN_TEXT_PX). */
export const LABEL_MIN_SCALE = MIN_TEXT_PX / SMALL_PX;
/** From this zoom up, nodes get outlines and edges arrow heads. */
export const DETAIL_MIN_SCALE = 0.2;
/** Far out, module names are drawn this size on screen (px), whatever the zoom. */
export const OVERVIEW_PX = 12;

export type TextLevel = "labels" | "overview";

/** Which text a zoom shows: every label, or the module names of the overview. */
export function textLevel(scale: number): TextLevel {
  return scale >= LABEL_MIN_SCALE ? "labels" : "overview";
}
