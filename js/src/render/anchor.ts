// What stays put when the view switches (unrolled <-> rolled): the selected op, or else the
// item nearest the middle of the screen, keeps its place on screen and the zoom stays.

import { type GraphModel, ROOT } from "../graph/tree";
import type { Rect } from "../layout/scenePlan";
import type { Camera } from "./camera";
import type { Frame } from "./frame";

export interface Anchor {
  node: string; // a node id of the old view: the item itself, or the first op inside a module
  sx: number; // where the item's centre was on screen
  sy: number;
  scale: number;
}

/** The first op (else any node) inside a group, in execution order. */
export function firstNodeIn(model: GraphModel, key: string): string | null {
  let fallback: string | null = null;
  const list = model.view.nodes;
  for (let i = 0; i < list.length; i++) {
    const n = list[i];
    if (!model.groupsOf[i].includes(key)) continue;
    if (n.kind === "op") return n.id;
    fallback ??= n.id;
  }
  return fallback;
}

const centre = (r: Rect): [number, number] => [r.x + r.w / 2, r.y + r.h / 2];

/** The selected item when it is on screen, else the item whose centre is nearest the view's. */
export function pickAnchor(
  frame: Frame,
  cam: Camera,
  width: number,
  height: number,
  selected: string | null,
): Anchor | null {
  const screen = (r: Rect): [number, number] => {
    const [x, y] = centre(r);
    return [x * cam.scale + cam.tx, y * cam.scale + cam.ty];
  };
  const onScreen = ([x, y]: [number, number]): boolean => x >= 0 && x <= width && y >= 0 && y <= height;
  let best: string | null = null;
  let bestPos: [number, number] = [0, 0];
  const sel = selected ? frame.scene.items.get(selected) : undefined;
  if (selected && sel && onScreen(screen(sel))) {
    best = selected;
    bestPos = screen(sel);
  } else {
    let dist = Infinity;
    for (const [id, r] of frame.scene.items) {
      const p = screen(r);
      const d = Math.hypot(p[0] - width / 2, p[1] - height / 2);
      if (d < dist) {
        dist = d;
        best = id;
        bestPos = p;
      }
    }
  }
  if (best === null) return null;
  const item = frame.vis.itemById.get(best);
  const node = item?.node
    ? item.node.id
    : item?.group && item.group !== ROOT
      ? firstNodeIn(frame.model, item.group)
      : null;
  return node ? { node, sx: bestPos[0], sy: bestPos[1], scale: cam.scale } : null;
}

/** The camera that puts `r`'s centre where the anchor was, at the anchor's zoom. */
export function placeAnchor(anchor: Anchor, r: Rect): Camera {
  const [x, y] = centre(r);
  return { scale: anchor.scale, tx: anchor.sx - x * anchor.scale, ty: anchor.sy - y * anchor.scale };
}
