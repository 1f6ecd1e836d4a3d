// World-space geometry of the visible edges: dagre's route inside one box, a simple
// curve between absolute positions when an edge crosses box boundaries.
import { edgeKey } from "../model/tree";
import type { VisEdge } from "../model/visibility";
import type { GroupLayout } from "./layoutCore";
import type { Rect, Scene } from "./layoutPlan";

export interface EdgeGeom {
  edge: VisEdge;
  curve: boolean; // pts = [x0,y0,c1x,c1y,c2x,c2y,x1,y1] (cubic) else a polyline
  pts: number[];
  box: Rect; // bounds for culling
  mid: [number, number];
}

export function edgeGeometry(
  edges: VisEdge[],
  scene: Scene,
  layoutOf: (box: string) => GroupLayout | undefined,
): EdgeGeom[] {
  const out: EdgeGeom[] = [];
  for (const e of edges) {
    const a = scene.items.get(e.source) ?? scene.boxes.get(e.source.slice(1));
    const b = scene.items.get(e.target) ?? scene.boxes.get(e.target.slice(1));
    if (!a || !b) continue;
    let pts: number[] | null = null;
    let curve = false;
    const l = layoutOf(e.lca);
    const o = scene.origins.get(e.lca);
    // dagre routed the edge between the lca's items: follow that route, and for an edge
    // that leaves or enters a box, join it to the real endpoints inside
    const route = l?.edgePoints[edgeKey(e.la, e.lb)];
    if (route && o && route.length >= 4) {
      const head = e.direct || e.la === e.source ? [] : [a.x + a.w / 2, a.y + a.h];
      const tail = e.direct || e.lb === e.target ? [] : [b.x + b.w / 2, b.y];
      pts = head;
      for (let i = 0; i < route.length; i += 2) pts.push(route[i] + o[0], route[i + 1] + o[1]);
      pts.push(...tail);
    }
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
