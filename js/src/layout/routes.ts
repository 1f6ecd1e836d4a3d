// dagre's edge routes made safe to draw: dagre gives one point per rank an edge passes (its
// dummy nodes, which it keeps clear of the nodes of that rank) between two points on the end
// nodes' borders. A straight line from a dummy to the next can still clip a tall neighbour
// where ranks hold nodes of different heights; so each route here runs vertically through
// every rank band (at the end node's centre, at each dummy's x) and turns only in the empty
// gaps between bands. The result never enters a node the edge does not connect.

export interface Box {
  x: number; // centre
  y: number;
  w: number;
  h: number;
}

/** One rank: the y of its centre line and how far up and down its nodes reach. */
export interface Band {
  y: number;
  top: number;
  bottom: number;
}

const SAME_RANK = 0.5;

/** The rank bands of laid-out nodes (dagre puts the nodes of one rank on one centre line). */
export function rankBands(nodes: Iterable<Box>): Band[] {
  const bands: Band[] = [];
  for (const n of nodes) {
    const b = bands.find((x) => Math.abs(x.y - n.y) < SAME_RANK);
    if (b) {
      b.top = Math.min(b.top, n.y - n.h / 2);
      b.bottom = Math.max(b.bottom, n.y + n.h / 2);
    } else bands.push({ y: n.y, top: n.y - n.h / 2, bottom: n.y + n.h / 2 });
  }
  return bands.sort((a, b) => a.y - b.y);
}

function bandAt(bands: readonly Band[], y: number): Band {
  // few ranks per box: a linear scan is as fast as a search
  for (const b of bands) if (Math.abs(b.y - y) < SAME_RANK) return b;
  return { y, top: y, bottom: y }; // a rank of dummies only
}

/** The same polyline walked from its end to its start. */
export function reversePoints(pts: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = pts.length - 2; i >= 0; i -= 2) out.push(pts[i], pts[i + 1]);
  return out;
}

/** Drops points equal to the one before. */
export function dedupe(pts: number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < pts.length; i += 2) {
    const n = out.length;
    if (n >= 2 && Math.abs(out[n - 2] - pts[i]) < 1e-9 && Math.abs(out[n - 1] - pts[i + 1]) < 1e-9) continue;
    out.push(pts[i], pts[i + 1]);
  }
  return out;
}

/**
 * The drawn route of an edge from `a` down to `b` through dagre's `points` (flat x,y, border
 * points first and last): from a's bottom centre to b's top centre. An edge dagre turned
 * upward (a cycle between collapsed modules) keeps dagre's own points.
 */
export function bandRoute(points: readonly number[], a: Box, b: Box, bands: readonly Band[]): number[] {
  if (b.y <= a.y) return points.slice();
  const from = bandAt(bands, a.y);
  const to = bandAt(bands, b.y);
  const out = [a.x, a.y + a.h / 2, a.x, from.bottom];
  for (let i = 2; i < points.length - 2; i += 2) {
    const x = points[i];
    const band = bandAt(bands, points[i + 1]);
    out.push(x, band.top, x, band.bottom);
  }
  out.push(b.x, to.top, b.x, b.y - b.h / 2);
  return dedupe(out);
}
