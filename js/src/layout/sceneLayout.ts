// Runs the layout of one visible set: the boxes whose layout is not cached go to the worker,
// then the cached per-box layouts are composed into a scene with routed edges. Only the newest
// request is delivered: a layout that finishes after a newer one was asked for is dropped.
// A first view's few boxes are laid out here instead (`inline`): dagre takes about a millisecond
// for them, while the worker's first answer comes tens of milliseconds later (it is still
// starting), and the first view's search may ask for two or three of them in turn. The worker
// gets them once the first view is drawn, to be warm (dagre compiled) for the first click.
import type { GraphModel } from "../graph/tree";
import type { Visible } from "../graph/visibility";
import { type GroupLayout, type LayoutJob, runJobs } from "./boxLayout";
import type { Wrap } from "./columns";
import { type EdgeGeom, edgeGeometry } from "./edges";
import { composeScene, planLayout, type Scene, type SizeCache } from "./scenePlan";
import { LayoutClient } from "./workerClient";

export interface LayoutRequest {
  vis: Visible;
  model: GraphModel;
  sizes: SizeCache;
  prefix: string; // cache key prefix: what else the layout depends on (view, parameters shown, wrap)
  wrap?: Wrap | null; // tall chains go in columns up to this (columns.ts)
  inline?: boolean; // lay out on this thread when the boxes to lay out are few (INLINE_MAX_ITEMS)
}

// the most items (nodes and closed boxes, in all the boxes to lay out) laid out inline: a first
// view shows at most ~150 (graph/defaultExpansion.ts), a few ms of dagre
export const INLINE_MAX_ITEMS = 300;

export interface Laid {
  scene: Scene;
  edges: EdgeGeom[];
}

export class LayoutRunner {
  private client = new LayoutClient();
  private cache = new Map<string, GroupLayout>();
  private seq = 0;
  private running = 0;
  /** Layouts run so far (cached ones included), and of them those that went to the worker. */
  runs = 0;
  workerRuns = 0;
  warmups = 0; // inline layouts sent to the worker afterwards, to warm it
  private warm: LayoutJob[] = []; // inline jobs the worker has not had yet
  private disposed = false;

  constructor(
    private onBusyChange: () => void,
    private onError: (e: Error) => void,
  ) {}

  /** Layouts in the worker now. */
  get busy(): number {
    return this.running;
  }

  get usesWorker(): boolean {
    return this.client.usesWorker;
  }

  /** Forgets every cached box layout (a new graph). */
  clear(): void {
    this.cache.clear();
  }

  /**
   * Lays out `req` and hands it to `apply`: at once when every box is cached, else when the
   * worker is done, and then only if no newer layout was asked for and `wanted()` still holds.
   */
  run(req: LayoutRequest, apply: (laid: Laid) => void, wanted: () => boolean): void {
    const plan = planLayout(req.vis, req.sizes, this.cache, req.prefix, req.wrap ?? null);
    const seq = ++this.seq;
    this.runs++;
    const compose = (): Laid => {
      const scene = composeScene(req.vis, req.model, req.sizes, plan.keys, this.cache);
      return {
        scene,
        edges: edgeGeometry(req.vis, req.model, scene, (box) => this.cache.get(plan.keys.get(box) ?? "")),
      };
    };
    if (plan.jobs.length === 0) {
      apply(compose());
      return;
    }
    if (req.inline && plan.jobs.reduce((n, j) => n + j.items.length, 0) <= INLINE_MAX_ITEMS) {
      performance.mark("lens:layout-start");
      const t0 = performance.now();
      try {
        for (const r of runJobs(plan.jobs)) this.cache.set(r.key, r);
      } catch (e) {
        this.onError(e as Error);
        return;
      }
      if (this.warm.push(...plan.jobs) === plan.jobs.length) setTimeout(() => this.warmWorker(), 0);
      performance.mark("lens:layout-done", { detail: { ms: performance.now() - t0, boxes: plan.jobs.length } });
      apply(compose());
      return;
    }
    this.workerRuns++;
    this.running++;
    this.onBusyChange();
    performance.mark("lens:layout-start");
    const t0 = performance.now();
    this.client
      .run(plan.jobs)
      .then((results) => {
        for (const r of results) this.cache.set(r.key, r);
        if (seq === this.seq && wanted()) {
          apply(compose());
          performance.mark("lens:layout-done", { detail: { ms: performance.now() - t0, boxes: plan.jobs.length } });
        }
      })
      .catch((e: Error) => this.onError(e))
      .finally(() => {
        this.running--;
        this.onBusyChange();
      });
  }

  /** The inline layouts of this task (a first view's), laid out again in the worker, results
   * dropped: after the task, so not before the first view is drawn. */
  private warmWorker(): void {
    if (this.disposed) return;
    const jobs = this.warm;
    this.warm = [];
    this.warmups++;
    this.client.run(jobs).catch(() => {}); // a failure shows on the next real layout
  }

  dispose(): void {
    this.disposed = true;
    this.client.dispose();
  }
}
