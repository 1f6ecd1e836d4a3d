// World-space geometry of the visible edges, all from dagre's routes (layout/routes.ts): an
// edge inside one box follows its route there; an edge that crosses boxes climbs out of the
// boxes around its source (each box's route to its out port, or straight down where nothing
// is below), follows the route between the two boxes in their common one, and descends into
// the target's boxes the same way, entering each beside its title (headers.ts). Between levels
// it only crosses a box's own border.
import { edgeKey, type GraphModel } from "../graph/tree";
import { GROUP_PREFIX, type VisEdge, type Visible } from "../graph/visibility";
import { type GroupLayout, PORT_IN, PORT_OUT } from "./boxLayout";
import { enterBox } from "./headers";
import { boxesUpTo, itemOrder, loopsBack } from "./ports";
import { dedupe, reversePoints } from "./routes";
import type { Rect, Scene } from "./scenePlan";

export interface EdgeGeom {
  edge: VisEdge;
  curve: boolean; // pts = [x0,y0,c1x,c1y,c2x,c2y,x1,y1] (cubic) else a polyline
  pts: number[];
  box: Rect; // bounds for culling
  mid: [number, number];
}

export function edgeGeometry(
  vis: Visible,
  model: GraphModel,
  scene: Scene,
  layoutOf: (box: string) => GroupLayout | undefined,
): EdgeGeom[] {
  const out: EdgeGeom[] = [];
  const rectOf = (id: string): Rect | undefined =>
    scene.items.get(id) ?? (id.startsWith(GROUP_PREFIX) ? scene.boxes.get(id.slice(GROUP_PREFIX.length)) : undefined);
  const order = itemOrder(vis);
  for (const e of vis.edges) {
    const a = rectOf(e.source);
    const b = rectOf(e.target);
    if (!a || !b) continue;
    const back = loopsBack(e, order);
    let pts = routed(e, back, vis, model, scene, layoutOf, rectOf);
    let curve = false;
    if (!pts) {
      curve = true;
      const x0 = a.x + a.w / 2;
      const y0 = a.y + a.h;
      const x1 = b.x + b.w / 2;
      const y1 = b.y;
      const dy = Math.max(30, Math.abs(y1 - y0) * 0.45);
      pts = [x0, y0, x0, y0 + dy, x1, y1 - dy, x1, y1];
    }
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < pts.length; i += 2) {
      minX = Math.min(minX, pts[i]);
      maxX = Math.max(maxX, pts[i]);
      minY = Math.min(minY, pts[i + 1]);
      maxY = Math.max(maxY, pts[i + 1]);
    }
    let mid: [number, number];
    if (curve) {
      // cubic bezier at t = 0.5
      mid = [(pts[0] + 3 * pts[2] + 3 * pts[4] + pts[6]) / 8, (pts[1] + 3 * pts[3] + 3 * pts[5] + pts[7]) / 8];
    } else {
      const k = Math.floor(pts.length / 4) * 2;
      mid = pts.length % 4 === 0 ? [(pts[k - 2] + pts[k]) / 2, (pts[k - 1] + pts[k + 1]) / 2] : [pts[k], pts[k + 1]];
    }
    out.push({ edge: e, curve, pts, box: { x: minX, y: minY, w: maxX - minX, h: maxY - minY }, mid });
  }
  return out;
}

/** The polyline of an edge through the box layouts; null where a route is missing. */
function routed(
  e: VisEdge,
  back: boolean, // a loop back: the reverse of the path from its target down to its source
  vis: Visible,
  model: GraphModel,
  scene: Scene,
  layoutOf: (box: string) => GroupLayout | undefined,
  rectOf: (id: string) => Rect | undefined,
): number[] | null {
  const route = (box: string, from: string, to: string): number[] | null => {
    const r = layoutOf(box)?.edgePoints[edgeKey(from, to)];
    const o = scene.origins.get(box);
    if (!r || !o || r.length < 4) return null;
    const w: number[] = [];
    for (let i = 0; i < r.length; i += 2) w.push(r[i] + o[0], r[i + 1] + o[1]);
    return w;
  };
  const port = (box: string, id: string): [number, number] | null => {
    const p = layoutOf(box)?.pos[id];
    const o = scene.origins.get(box);
    return p && o ? [p[0] + o[0], p[1] + o[1]] : null;
  };
  const [from, to] = back ? [e.target, e.source] : [e.source, e.target];
  const pts: number[] = [];
  // out of the boxes around where the path starts, innermost first
  for (const [box, item] of boxesUpTo(vis, model, from, e.lca)) {
    const r = rectOf(item);
    const br = scene.boxes.get(box);
    const l = layoutOf(box);
    if (!r || !br || !l) return null;
    pts.push(r.x + r.w / 2, r.y + r.h);
    if (l.portOut) {
      const via = route(box, item, PORT_OUT);
      const p = port(box, PORT_OUT);
      if (!via || !p) return null;
      pts.push(...via, p[0], br.y + br.h);
    } else pts.push(r.x + r.w / 2, br.y + br.h);
  }
  const between = route(e.lca, e.la, e.lb);
  if (!between) return null;
  pts.push(...(back ? reversePoints(between) : between));
  // into the boxes around where it ends, outermost first
  // (beside its title: headers.ts)
  for (const [box, item] of boxesUpTo(vis, model, to, e.lca).reverse()) {
    const br = scene.boxes.get(box);
    const l = layoutOf(box);
    if (!br || !l) return null;
    const title = scene.titles.get(box);
    if (l.portIn) {
      const p = port(box, PORT_IN);
      const via = route(box, PORT_IN, item);
      if (!via || !p) return null;
      enterBox(pts, br, title, p[0], p[1]);
      pts.push(...via);
    } else {
      const r = rectOf(item);
      if (!r) return null;
      enterBox(pts, br, title, r.x + r.w / 2, r.y);
    }
  }
  return dedupe(back ? reversePoints(pts) : pts);
}
