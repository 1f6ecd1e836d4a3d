// The test-only debug hook: `el.__lens` on the widget's element and its root, read by
// tests/browser and bench/widget_bench.py to wait for layouts and to find things on screen.
// Its surface is a contract with those readers: add to it, do not change it.

import type { ViewName } from "./graph/protocol";
import { groupLines, headerLines, nodeLines } from "./layout/labels";
import type { LayoutRunner } from "./layout/sceneLayout";
import type { Rect } from "./layout/scenePlan";
import { LABEL_FONT, labelBoxes, traceEdge } from "./render/drawEdges";
import type { Renderer } from "./render/renderer";

export interface LensDebug {
  readonly visibleCount: number;
  readonly visibleIds: string[];
  readonly layoutStatus: "idle" | "running";
  readonly layoutCount: number; // layouts applied so far
  /** Layouts run so far, each a visible set laid out (those the first view's search discarded
   * and those composed from cached boxes included), how many of them went to the worker, and how
   * often the worker was given layouts made on the page (a first view's) to warm it. */
  readonly layoutRuns: { all: number; worker: number; warmups: number };
  readonly view: ViewName;
  readonly expanded: string[];
  readonly markedItem: string | null; // the item drawn selected (a node, or a module inspected)
  readonly markedBox: string | null; // the open module drawn selected (its inspector shown)
  readonly selected: string;
  readonly drawnItems: number;
  readonly lastFrameMs: number;
  readonly usesWorker: boolean;
  readonly scale: number;
  readonly camera: { scale: number; tx: number; ty: number }; // screen = graph * scale + t
  nodeScreenPos(id: string): { x: number; y: number } | null;
  /** The text drawn on an item (a node's name and shape; a module's class, address, summary). */
  itemLines(id: string): string[] | null;
  /** The title drawn on an open module's box: its class and short address. */
  headerLines(key: string): string[] | null;
  /** The drawn item that stands for node `id`: itself, or the collapsed module around it. */
  visibleItemFor(id: string): string | null;
  groupHeaderPos(key: string): { x: number; y: number } | null;
  overlayColor(id: string): string | null; // the metric overlay's fill of a visible item
  overlayShares(id: string): { device: string; color: string; count: number }[] | null; // a mixed item's device bar
  overlayFlagged(id: string): boolean; // drawn with the NaN/Inf mark
  overlayQuietFlagged(id: string): boolean; // ... the quieter one: its NaN/Inf is masked later
  overlayGradFlagged(id: string): boolean; // drawn with the NaN/Inf-gradient mark
  overlayStarved(id: string): boolean; // drawn with the "got no gradient" outline
  /** The laid-out scene in graph coordinates, for geometric checks. */
  sceneGeometry(): SceneGeometry | null;
  /** Every edge label as drawn when zoomed in (text, box in graph coordinates), culling aside. */
  edgeLabelBoxes(): { source: string; target: string; text: string; x: number; y: number; w: number; h: number }[];
  /** Every edge's path as drawn (the canvas's own path calls), as SVG path data in graph coordinates. */
  edgePaths(): { source: string; target: string; d: string }[];
  /** Far out (semantic zoom): the module names drawn at a fixed size, in canvas pixels. */
  readonly overviewLabels: { key: string; text: string; x: number; y: number; w: number; h: number }[];
  /** The smallest text drawn in the last frame, in screen pixels (0: no text). */
  readonly minTextPx: number;
  /** The overview in the canvas's corner: null when not drawn; its box in page coordinates. */
  readonly minimap: { x: number; y: number; w: number; h: number } | null;
}

export interface SceneGeometry {
  items: { id: string; x: number; y: number; w: number; h: number; container: string }[];
  // expanded modules; `title`: the band of its header its title covers (edges keep off it)
  boxes: { key: string; x: number; y: number; w: number; h: number; parent: string; title: Rect | null }[];
  edges: { source: string; target: string; pts: number[]; curve: boolean }[];
}

/** The controller's state the hook reports, read anew on every access. */
export interface DebugState {
  layouts: Pick<LayoutRunner, "busy" | "runs" | "workerRuns" | "warmups" | "usesWorker">;
  layoutCount: number;
  view: ViewName;
  expanded: ReadonlySet<string>;
  selected: string;
}

export function exposeDebug(
  elements: HTMLElement[],
  r: Renderer,
  state: () => DebugState,
  minimap: () => HTMLCanvasElement | null,
): void {
  const screen = (rect: Rect | undefined, header = false): { x: number; y: number } | null => {
    if (!rect) return null;
    const c = r.canvas.getBoundingClientRect();
    const [sx, sy] = r.toScreen(rect.x + rect.w / 2, header ? rect.y + 10 : rect.y + rect.h / 2);
    return { x: c.left + sx, y: c.top + sy };
  };
  const dbg: LensDebug = {
    get visibleCount() {
      return r.frame?.vis.items.length ?? 0;
    },
    get visibleIds() {
      return r.frame ? r.frame.vis.items.map((i) => i.id) : [];
    },
    get layoutStatus() {
      return state().layouts.busy > 0 || !r.frame ? "running" : "idle";
    },
    get layoutCount() {
      return state().layoutCount;
    },
    get layoutRuns() {
      const { runs, workerRuns, warmups } = state().layouts;
      return { all: runs, worker: workerRuns, warmups };
    },
    get view() {
      return state().view;
    },
    get expanded() {
      return [...state().expanded].sort();
    },
    get selected() {
      return state().selected;
    },
    get markedItem() {
      return r.selected;
    },
    get markedBox() {
      return r.selectedBox && r.frame?.scene.boxes.has(r.selectedBox) ? r.selectedBox : null;
    },
    get drawnItems() {
      return r.drawnItems;
    },
    get lastFrameMs() {
      return r.lastFrameMs;
    },
    get usesWorker() {
      return state().layouts.usesWorker;
    },
    get scale() {
      return r.cam.scale;
    },
    get camera() {
      return { ...r.cam };
    },
    nodeScreenPos: (id) => screen(r.frame?.scene.items.get(id)),
    visibleItemFor: (id) => r.frame?.vis.rep.get(id) ?? null,
    itemLines: (id) => {
      const f = r.frame;
      const it = f?.vis.itemById.get(id);
      if (f && it?.node) return nodeLines(it.node);
      const g = f?.model.groups.get(id.replace(/^@/, ""));
      return f && g ? groupLines(g, f.model.viewName) : null;
    },
    headerLines: (key) => {
      const f = r.frame;
      const g = f?.model.groups.get(key);
      return f && g ? headerLines(g, f.model.viewName) : null;
    },
    groupHeaderPos: (key) => screen(r.frame?.scene.boxes.get(key), true),
    overlayColor: (id) => r.overlay?.fill(id) ?? null,
    overlayShares: (id) => r.overlay?.shares(id)?.map((s) => ({ ...s })) ?? null,
    overlayFlagged: (id) => r.overlay?.flagged(id) ?? false,
    overlayQuietFlagged: (id) => r.overlay?.quietFlag?.(id) ?? false,
    overlayGradFlagged: (id) => r.overlay?.gradFlagged(id) ?? false,
    overlayStarved: (id) => r.overlay?.starved(id) ?? false,
    sceneGeometry: () => {
      const f = r.frame;
      if (!f) return null;
      return {
        items: f.vis.items.map((it) => ({ id: it.id, container: it.container, ...f.scene.items.get(it.id)! })),
        boxes: [...f.scene.boxes].map(([key, b]) => ({
          key,
          parent: f.model.groups.get(key)?.parent ?? "",
          title: f.scene.titles.get(key) ?? null,
          ...b,
        })),
        edges: f.edges.map((e) => ({ source: e.edge.source, target: e.edge.target, pts: e.pts, curve: e.curve })),
      };
    },
    edgeLabelBoxes: () => {
      const f = r.frame;
      const ctx = r.canvas.getContext("2d");
      if (!f || !ctx) return [];
      ctx.save();
      ctx.font = LABEL_FONT;
      const boxes = labelBoxes(f, f.edges, r.showShapes, (t) => ctx.measureText(t).width, [...f.scene.titles.values()]);
      ctx.restore();
      return boxes.map(({ edge, text, x, y, w, h }) => ({
        source: edge.edge.source,
        target: edge.edge.target,
        text,
        x,
        y,
        w,
        h,
      }));
    },
    edgePaths: () =>
      (r.frame?.edges ?? []).map((e) => {
        const d: string[] = [];
        traceEdge(
          {
            moveTo: (x, y) => d.push(`M${x},${y}`),
            lineTo: (x, y) => d.push(`L${x},${y}`),
            quadraticCurveTo: (cx, cy, x, y) => d.push(`Q${cx},${cy} ${x},${y}`),
            bezierCurveTo: (ax, ay, bx, by, x, y) => d.push(`C${ax},${ay} ${bx},${by} ${x},${y}`),
          },
          e,
        );
        return { source: e.edge.source, target: e.edge.target, d: d.join("") };
      }),
    get overviewLabels() {
      return r.overview.map(({ key, text, x, y, w, h }) => ({ key, text, x, y, w, h }));
    },
    get minTextPx() {
      return r.minTextPx;
    },
    get minimap() {
      const c = minimap();
      if (!c) return null;
      const b = c.getBoundingClientRect();
      return { x: b.left, y: b.top, w: b.width, h: b.height };
    },
  };
  for (const el of elements) (el as unknown as { __lens: LensDebug }).__lens = dbg;
}
