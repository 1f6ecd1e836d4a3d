// One layout of the view shown: its visible set laid out (in the worker, for the boxes not laid
// out before), a first view's search for the expansion that fits, the camera placed and the frame
// handed to the renderer. Kept out of app.ts (the composition root), which calls `refresh`.
import { DEFAULT_HEIGHT, type HeightHandle } from "../controls/heightHandle";
import type { GraphModel } from "../graph/tree";
import { computeVisible, type Visible } from "../graph/visibility";
import { type Wrap, wrapFor, wrapKey } from "../layout/columns";
import { type Laid, LayoutRunner } from "../layout/sceneLayout";
import { heightFloor } from "../layout/scenePlan";
import { preloadPlots } from "../panel/plots";
import { nextExpansion, placeCamera } from "../render/cameraPlan";
import { FIT } from "../state/viewStore";
import type { AppHost } from "./appHost";
import { notePassThrough } from "./passThrough";
import { openRolledInstead } from "./rolledFirst";
import { inspectedBox } from "./selection";

export class LayoutPass {
  readonly runner: LayoutRunner;
  count = 0; // layouts applied (read by the debug hook)
  private painted = false;
  private wrapKey = ""; // the wrap of tall chains the last layout used

  constructor(
    private app: AppHost,
    private root: HTMLElement,
    private height: HeightHandle,
    private onBusyChange: () => void,
    onError: (e: Error) => void,
  ) {
    this.runner = new LayoutRunner(onBusyChange, onError);
  }

  /** Lays out what is visible now (in the worker, for the boxes not laid out before), then shows it. */
  refresh(after?: () => void): void {
    const app = this.app;
    const m = app.current;
    if (!m || !app.sizes) return;
    const vis = computeVisible(m, { expanded: app.expanded, showParams: app.showParams });
    // no height set: the graph fills the notebook's visible height, before it is laid out for it
    if (this.height.fitHost(this.root)) app.pane.fitCanvas({ w: this.root.clientWidth, h: DEFAULT_HEIGHT });
    // a tall chain wraps into columns in a wide widget: from the widget's width (not the
    // canvas's, which an inspector opening narrows) and the graph's height
    const wrap = this.wrap();
    this.wrapKey = wrapKey(wrap);
    const prefix = `${app.viewName}|${app.showParams ? 1 : 0}|${this.wrapKey}|`;
    this.runner.run(
      { vis, model: m, sizes: app.sizes, prefix, wrap, inline: !this.painted },
      (laid) => this.apply(m, vis, laid, after),
      () => app.current === m,
    );
  }

  /** The widget changed size: lay out again where its wrap of tall chains changed (columns.ts). */
  resized(): void {
    if (wrapKey(this.wrap()) !== this.wrapKey && this.app.renderer.frame) this.refresh();
  }

  private wrap(): Wrap | null {
    return wrapFor(this.root.clientWidth, this.app.pane.el.clientHeight || DEFAULT_HEIGHT);
  }

  private apply(m: GraphModel, vis: Visible, laid: Laid, after?: () => void): void {
    const { app } = this;
    const { renderer, store } = app;
    app.pane.settle(); // the canvas takes the size a panel opening put off (narrowBeside)
    const search = store.search;
    if (search) {
      const floor = (e: string[]): number =>
        heightFloor(computeVisible(m, { expanded: new Set(e), showParams: app.showParams }), app.sizes!);
      const next = nextExpansion(search, laid.scene.bounds, renderer, floor);
      if (next) {
        store.update({ expanded: new Set(next) });
        return this.refresh(after);
      }
      if (openRolledInstead(app, laid.scene.bounds)) return;
      store.update({ camera: FIT }); // found: fit it
      app.sync.writeExpanded(app.expanded);
    }
    app.vis = vis;
    renderer.frame = { model: m, vis, ...laid };
    notePassThrough(app);
    renderer.selected = app.selected ? (vis.rep.get(app.selected) ?? null) : inspectedBox(app, vis);
    this.count++;
    placeCamera(store.takeCamera(), renderer, vis, laid.scene);
    after?.();
    if (!this.painted) {
      // the first frame is drawn now, not on the next animation frame, so it can be timed
      this.painted = true;
      renderer.draw();
      performance.mark("lens:first-paint", { detail: { items: vis.items.length } });
      preloadPlots(); // evaluated after first paint, ready by the first click
    }
    renderer.request();
    this.onBusyChange();
  }
}
