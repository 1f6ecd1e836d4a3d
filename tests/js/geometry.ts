// Lays a payload out as the widget does, and checks the scene geometrically: does any edge
// segment enter a box it does not connect?

import type { GraphPayload, ViewName } from "../../js/src/graph/protocol";
import { buildModel, type GraphModel } from "../../js/src/graph/tree";
import { computeVisible, type Visible } from "../../js/src/graph/visibility";
import { type GroupLayout, runJobs } from "../../js/src/layout/boxLayout";
import type { Wrap } from "../../js/src/layout/columns";
import { type EdgeGeom, edgeGeometry } from "../../js/src/layout/edges";
import { DEFAULT_METRICS } from "../../js/src/layout/labels";
import { composeScene, planLayout, type Rect, type Scene, SizeCache } from "../../js/src/layout/scenePlan";

/** Every group's address of a view (what Expand all opens). */
export function allGroups(p: GraphPayload, view: ViewName): string[] {
  return [...buildModel(p, view).groups.values()].filter((g) => g.key).map((g) => g.address);
}

/** One view of `p` laid out with `expanded` open: model, visible set, scene, edges, box layouts. */
export function laidOut(p: GraphPayload, expanded: string[], view: ViewName = "unrolled", wrap: Wrap | null = null) {
  const m = buildModel(p, view);
  const sizes = new SizeCache(m, DEFAULT_METRICS);
  const v = computeVisible(m, { expanded: new Set(expanded), showParams: false });
  const plan = planLayout(v, sizes, new Map(), `${view}|`, wrap);
  const cache = new Map<string, GroupLayout>(runJobs(plan.jobs).map((r) => [r.key, r]));
  const scene = composeScene(v, m, sizes, plan.keys, cache);
  const geoms = edgeGeometry(v, m, scene, (box) => cache.get(plan.keys.get(box)!));
  return { m, v, scene, geoms, cache, plan };
}

const SHRINK = 1; // touching a border is not crossing it

/** True when the segment (x0,y0)-(x1,y1) enters the inside of r (Liang-Barsky clipping). */
export function segmentHitsRect(x0: number, y0: number, x1: number, y1: number, r: Rect): boolean {
  const xmin = r.x + SHRINK;
  const xmax = r.x + r.w - SHRINK;
  const ymin = r.y + SHRINK;
  const ymax = r.y + r.h - SHRINK;
  if (xmin >= xmax || ymin >= ymax) return false;
  let t0 = 0;
  let t1 = 1;
  const dx = x1 - x0;
  const dy = y1 - y0;
  const clip = (p: number, q: number): boolean => {
    if (p === 0) return q > 0;
    const t = q / p;
    if (p < 0) {
      if (t > t1) return false;
      if (t > t0) t0 = t;
    } else {
      if (t < t0) return false;
      if (t < t1) t1 = t;
    }
    return true;
  };
  return clip(-dx, x0 - xmin) && clip(dx, xmax - x0) && clip(-dy, y0 - ymin) && clip(dy, ymax - y0) && t0 < t1;
}

/** Every (edge, box) where an edge's polyline enters a node, collapsed module or expanded
 * module box that is neither of its ends nor around one of them. */
export function crossings(scene: Scene, edges: EdgeGeom[], vis: Visible, model: GraphModel): string[] {
  const around = (id: string): Set<string> => {
    const s = new Set<string>([id]);
    let box = vis.itemById.get(id)?.container ?? "";
    while (box) {
      s.add(`@${box}`);
      box = model.groups.get(box)?.parent ?? "";
    }
    return s;
  };
  const rects: [string, Rect][] = [...scene.items, ...[...scene.boxes].map(([k, r]): [string, Rect] => [`@${k}`, r])];
  const found: string[] = [];
  for (const g of edges) {
    if (g.curve) {
      found.push(`${g.edge.source}->${g.edge.target}: not routed`);
      continue;
    }
    const ok = new Set([...around(g.edge.source), ...around(g.edge.target)]);
    for (const [id, r] of rects) {
      if (ok.has(id)) continue;
      for (let i = 0; i + 3 < g.pts.length; i += 2)
        if (segmentHitsRect(g.pts[i], g.pts[i + 1], g.pts[i + 2], g.pts[i + 3], r)) {
          found.push(`${g.edge.source}->${g.edge.target} crosses ${id}`);
          break;
        }
    }
  }
  return found;
}
