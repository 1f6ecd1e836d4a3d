// Turns a Visible set into layout jobs for the boxes whose layout is not cached
// (bottom-up, children first), and composes cached per-box layouts into absolute rects.
import { type GraphModel, ROOT } from "../graph/tree";
import { GROUP_PREFIX, type Visible } from "../graph/visibility";
import { boxSize, type GroupLayout, LAYOUT_OPTS, type LayoutItem, type LayoutJob } from "./boxLayout";
import type { Wrap } from "./columns";
import { TITLE_GAP, TITLE_X, titleRect, titleWidth } from "./headers";
import { BOX_HEADER, BOX_PAD, groupSize, type Metrics, nodeSize } from "./labels";
import { type BoxPorts, boxPorts, portsKey } from "./ports";

export interface Rect {
  x: number; // top-left
  y: number;
  w: number;
  h: number;
}

export interface Plan {
  keys: Map<string, string>; // box -> cache key
  jobs: LayoutJob[]; // missing layouts, children first
}

export class SizeCache {
  private sizes = new Map<string, [number, number]>();
  private titles = new Map<string, number>();
  constructor(
    readonly model: GraphModel,
    private metrics: Metrics,
  ) {}
  of(id: string): [number, number] {
    let s = this.sizes.get(id);
    if (!s) {
      if (id.startsWith(GROUP_PREFIX))
        s = groupSize(this.model.groups.get(id.slice(1))!, this.model.viewName, this.metrics);
      else s = nodeSize(this.model.nodes.get(id)!, this.metrics);
      this.sizes.set(id, s);
    }
    return s;
  }
  /** The least content width of an open box: its title fits in the left half of the box, so
   * an edge entering at the middle (where centred content is entered) passes beside the title
   * straight down, with no jog around it (headers.ts). */
  headerWidth(box: string): number {
    if (!this.model.groups.get(box) || box === ROOT) return 0;
    return 2 * (TITLE_X + this.titleWidth(box) + TITLE_GAP) - 2 * BOX_PAD;
  }
  /** The drawn width of an expanded box's title. */
  titleWidth(box: string): number {
    let w = this.titles.get(box);
    if (w === undefined) {
      const g = this.model.groups.get(box);
      this.titles.set(box, (w = g && box !== ROOT ? titleWidth(g, this.model.viewName, this.metrics) : 0));
    }
    return w;
  }
}

/** Each box's cache key: what its layout depends on (its content, with the boxes inside, and its ports). */
/**
 * A floor on the height a layout of `vis` takes: its tallest chain of items along edges that
 * go forward in execution order, each item's height and the gap below it (dagre puts each
 * edge's target at least one rank below its source; boxes around items only add to it).
 */
export function heightFloor(vis: Visible, sizes: SizeCache): number {
  const order = new Map(vis.items.map((it, i) => [it.id, i]));
  const into = new Map<string, string[]>();
  for (const e of vis.edges) {
    if ((order.get(e.source) ?? 0) >= (order.get(e.target) ?? 0)) continue;
    const list = into.get(e.target);
    if (list) list.push(e.source);
    else into.set(e.target, [e.source]);
  }
  const below = new Map<string, number>(); // tallest chain ending at an item, the item included
  let tallest = 0;
  for (const it of vis.items) {
    let above = 0;
    for (const s of into.get(it.id) ?? []) above = Math.max(above, (below.get(s) ?? 0) + LAYOUT_OPTS.ranksep);
    const h = above + sizes.of(it.id)[1];
    below.set(it.id, h);
    tallest = Math.max(tallest, h);
  }
  return tallest;
}

export function cacheKeys(vis: Visible, prefix: string, ports?: ReadonlyMap<string, BoxPorts>): Map<string, string> {
  const keys = new Map<string, string>();
  for (let i = vis.boxes.length - 1; i >= 0; i--) {
    const box = vis.boxes[i];
    const inner: string[] = [];
    for (const id of vis.boxChildren.get(box)!) {
      if (id.startsWith(GROUP_PREFIX)) {
        const k = keys.get(id.slice(GROUP_PREFIX.length));
        if (k !== undefined) inner.push(k);
      }
    }
    keys.set(box, `${prefix}${box}{${inner.join(",")}}${portsKey(ports?.get(box))}`);
  }
  return keys;
}

export function planLayout(
  vis: Visible,
  sizes: SizeCache,
  cache: ReadonlyMap<string, GroupLayout>,
  prefix: string,
  wrap: Wrap | null = null,
): Plan {
  const ports = boxPorts(vis, sizes.model);
  const keys = cacheKeys(vis, prefix, ports);
  const jobs: LayoutJob[] = [];
  for (let i = vis.boxes.length - 1; i >= 0; i--) {
    const box = vis.boxes[i];
    const key = keys.get(box)!;
    if (cache.has(key)) continue;
    const items: LayoutItem[] = vis.boxChildren.get(box)!.map((id) => {
      const childKey = id.startsWith(GROUP_PREFIX) ? keys.get(id.slice(GROUP_PREFIX.length)) : undefined;
      if (childKey !== undefined) {
        const cached = cache.get(childKey);
        if (cached) {
          const [w, h] = boxSize(cached);
          return { id, w, h };
        }
        return { id, w: 0, h: 0, ref: childKey };
      }
      const [w, h] = sizes.of(id);
      return { id, w, h };
    });
    const p = ports.get(box);
    jobs.push({
      key,
      items,
      edges: vis.layoutEdges.get(box) ?? [],
      minW: sizes.headerWidth(box),
      ...(wrap ? { wrap } : {}),
      ...(p ? { ports: { in: [...p.in], out: [...p.out] } } : {}),
    });
  }
  return { keys, jobs };
}

export interface Scene {
  items: Map<string, Rect>; // visible nodes and collapsed groups
  boxes: Map<string, Rect>; // expanded module boxes (ROOT excluded)
  titles: Map<string, Rect>; // the header band each box's title covers (edges keep off it)
  origins: Map<string, [number, number]>; // content origin of every box, ROOT included
  bounds: Rect;
}

export function composeScene(
  vis: Visible,
  model: GraphModel,
  sizes: SizeCache,
  keys: ReadonlyMap<string, string>,
  cache: ReadonlyMap<string, GroupLayout>,
): Scene {
  const origins = new Map<string, [number, number]>([[ROOT, [0, 0]]]);
  const boxes = new Map<string, Rect>();
  const titles = new Map<string, Rect>();
  const layoutOf = (box: string): GroupLayout => {
    const l = cache.get(keys.get(box)!);
    if (!l) throw new Error(`no layout for ${box}`);
    return l;
  };
  for (const box of vis.boxes) {
    if (box === ROOT) continue;
    const parent = model.groups.get(box)!.parent ?? ROOT;
    const [ox, oy] = origins.get(parent)!;
    const [cx, cy] = layoutOf(parent).pos[GROUP_PREFIX + box];
    const [w, h] = boxSize(layoutOf(box));
    const r = { x: ox + cx - w / 2, y: oy + cy - h / 2, w, h };
    boxes.set(box, r);
    titles.set(box, titleRect(r, sizes.titleWidth(box)));
    origins.set(box, [r.x + BOX_PAD, r.y + BOX_HEADER + BOX_PAD]);
  }
  const items = new Map<string, Rect>();
  for (const it of vis.items) {
    const [ox, oy] = origins.get(it.container)!;
    const [cx, cy] = layoutOf(it.container).pos[it.id];
    const [w, h] = sizes.of(it.id);
    items.set(it.id, { x: ox + cx - w / 2, y: oy + cy - h / 2, w, h });
  }
  const root = layoutOf(ROOT);
  return { items, boxes, titles, origins, bounds: { x: 0, y: 0, w: root.w, h: root.h } };
}
