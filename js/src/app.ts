// The widget controller: composes the components and runs the pipeline kernel traits ->
// model -> layout -> render. The view state (view, expansion, selection, camera intent) lives
// in one store (state/viewStore.ts), changed only through its `update`; components subscribe
// to what they show. Trait sync rules live in kernel/traitSync.ts; whether a kernel can
// answer requests, in kernel/kernelLink.ts.
import { AblationBanner } from "./controls/ablationBanner";
import { Banner } from "./controls/banner";
import { bindCanvasInput } from "./controls/canvasInput";
import { GradientControl, type SelectAs } from "./controls/gradientControl";
import { DEFAULT_HEIGHT, HeightHandle } from "./controls/heightHandle";
import { keepKeysInControls } from "./controls/hostKeys";
import type { OverlayControl } from "./controls/overlayControl";
import { Toolbar } from "./controls/toolbar";
import { ViewHint } from "./controls/viewHint";
import { exposeDebug } from "./debugHook";
import { expansionLevels, growCandidates } from "./graph/defaultExpansion";
import { GraphViews } from "./graph/graphViews";
import type { GraphPayload, ViewName } from "./graph/protocol";
import { search } from "./graph/search";
import type { GraphModel } from "./graph/tree";
import { computeVisible, type Visible } from "./graph/visibility";
import { type KernelLink, notebookLink } from "./kernel/kernelLink";
import { RequestClient } from "./kernel/messages";
import { type Origin, TraitSync } from "./kernel/traitSync";
import type { WidgetModel } from "./kernel/widgetModel";
import { type Wrap, wrapFor, wrapKey } from "./layout/columns";
import { DEFAULT_METRICS, type Metrics, measureMetrics } from "./layout/labels";
import { type Laid, LayoutRunner } from "./layout/sceneLayout";
import { heightFloor, SizeCache } from "./layout/scenePlan";
import type { MonitorView } from "./monitor/monitorView";
import type { Inspector } from "./panel/inspector";
import { injectPanelLayout } from "./panel/panelLayout";
import { preloadPlots } from "./panel/plots";
import { sameRankGraph } from "./ranks/rankLogic";
import { RankPicker } from "./ranks/rankPicker";
import { FitSearch } from "./render/camera";
import { nextExpansion, placeCamera } from "./render/cameraPlan";
import { CameraTrail } from "./render/cameraTrail";
import { h } from "./render/dom";
import { GraphPane } from "./render/graphPane";
import type { Renderer } from "./render/renderer";
import { injectStyles } from "./render/styles";
import { downloadViewSvg } from "./render/svgExport";
import { pickTheme, type Theme, watchTheme } from "./render/theme";
import { FIT, KEEP, ViewStore } from "./state/viewStore";
import type { AppHost, SelectOptions } from "./wiring/appHost";
import { collapseAll, expandAll, openDown, toggleGroup } from "./wiring/cameraMoves";
import { createInspector } from "./wiring/inspectorWiring";
import { createMonitor, createOverlay } from "./wiring/overlayWiring";
import { notePassThrough } from "./wiring/passThrough";
import { openRolledInstead } from "./wiring/rolledFirst";
import {
  inspectedBox,
  inspectGroup,
  jump,
  select as selectIn,
  selectUnrolled as selectUnrolledIn,
} from "./wiring/selection";
import { switchView } from "./wiring/viewSwitch";

export interface AppOptions {
  /** Who answers requests; by default the kernel of the widget's notebook (see notebookLink). */
  link?: KernelLink;
}

// the members the split-out parts use (wiring/appHost.ts) are public; the rest stay private
export class LensApp implements AppHost {
  readonly root: HTMLElement;
  theme: Theme;
  metrics: Metrics = DEFAULT_METRICS;
  views: GraphViews | null = null;
  readonly store = new ViewStore();
  private kernelStatus = "";
  vis: Visible | null = null;
  sizes: SizeCache | null = null;
  private layoutCount = 0;
  private painted = false;
  private layouts = new LayoutRunner(
    () => this.updateStatus(),
    (e) => this.banner.showLayoutError(e.message),
  );
  sync: TraitSync;
  requests: RequestClient;
  pane: GraphPane;
  renderer: Renderer;
  inspector: Inspector;
  toolbar: Toolbar;
  private banner = new Banner();
  viewHint = new ViewHint();
  private ablationBanner = new AblationBanner(() => this.requests.endAblation());
  private unwatchTheme: () => void;
  private unbindInput: () => void;
  overlay: OverlayControl;
  monitor: MonitorView;
  grads = new GradientControl((id, as) => this.selectUnrolled(id, as));
  // several ranks' logs (LensWidget.from_logs): which rank is shown, compared with which
  private ranks = new RankPicker({
    showRank: (params) => this.requests.request({ method: "showRank", params }, { timeoutMs: 120000 }),
    onPage: () => !!this.link.noRerun,
  });
  link: KernelLink;
  private heightHandle: HeightHandle;
  private wrapKey = ""; // the wrap of tall chains the last layout used
  trail = new CameraTrail(); // where the camera was before each module opened

  constructor(model: WidgetModel, el: HTMLElement, opts: AppOptions = {}) {
    injectStyles(el.ownerDocument);
    injectPanelLayout(el.ownerDocument);
    this.theme = pickTheme(el);
    this.root = h("div", "lens-root");
    this.root.dataset.testid = "lens-root";
    el.appendChild(this.root);

    this.toolbar = new Toolbar({
      fit: () => this.pane.fit(),
      expandAll: () => expandAll(this),
      collapseAll: () => collapseAll(this),
      setView: (view) => this.setView(view, "user"),
      showShapes: (on) => this.pane.showShapes(on),
      showParams: (on) => {
        this.store.update({ showParams: on });
        this.refresh();
      },
      exportSvg: () => this.exportSvg(),
      search: (query) => (this.current ? search(this.current, query, 30, this.showParams) : []),
      jump: (hit) => jump(this, hit),
    });

    const main = h("div", "lens-main");
    this.heightHandle = new HeightHandle(model, main); // the height trait, and a handle to drag it
    this.pane = new GraphPane(this.theme);
    this.renderer = this.pane.renderer;
    this.pane.onResize = () => this.resized();
    this.inspector = createInspector(this);
    main.append(this.pane.el, this.inspector.el, this.grads.panel.el);
    this.overlay = createOverlay(this);
    this.monitor = createMonitor(this, model);
    this.root.append(
      this.toolbar.el,
      this.overlay.picker.el,
      this.ranks.el,
      this.monitor.bar,
      this.banner.el,
      this.viewHint.el,
      this.grads.banner.el,
      this.ablationBanner.el,
      main,
      this.heightHandle.el,
      this.monitor.el,
    );
    this.metrics = measureMetrics(this.pane.canvas) ?? DEFAULT_METRICS;
    keepKeysInControls(this.root); // the listener goes with the root

    this.link = opts.link ?? notebookLink(el);
    this.link.onChange(() => this.updateStatus());
    this.requests = new RequestClient(model, this.link.gate, () => this.link.lost?.());
    this.monitor.start();
    this.unbindInput = bindCanvasInput(
      this.pane.canvas,
      this.renderer,
      {
        toggleGroup: (key, expand) => toggleGroup(this, key, expand),
        openDown: (key) => openDown(this, key),
        select: (id) => this.select(id, {}),
        // a click on a module (its box or its title) selects it: its inspector opens, and the
        // graph it narrows keeps what was clicked where it was (toggleGroup's hold, then reveal)
        inspectGroup: (key) => inspectGroup(this, key),
      },
      this.pane.wheelHint,
    );
    this.root.classList.toggle("lens-dark", this.theme.dark);
    this.unwatchTheme = watchTheme(el, (t) => this.setTheme(t));

    this.sync = new TraitSync(
      model,
      () => ({ view: this.viewName, selected: this.selected, expanded: this.expanded }),
      {
        graph: (payload, initial) => this.setGraph(payload, initial),
        graphError: (message) => this.banner.showGraphError(message),
        view: (view) => this.setView(view, "kernel"),
        selected: (id) => this.select(id, { center: true, origin: "kernel" }),
        expanded: (next) => {
          // the kernel chose what is open: a first view's search for what fits is over
          this.store.update({ expanded: next, camera: this.store.search ? FIT : this.store.state.camera });
          this.refresh();
        },
        status: (text) => {
          this.kernelStatus = text;
          this.updateStatus();
        },
      },
    );
    const { view, expanded, selected, status } = this.sync;
    this.store.update({ view, expanded, selected });
    this.kernelStatus = status;
    this.toolbar.showView(this.viewName);
    this.store.subscribe(["view"], (s) => this.toolbar.showView(s.view));
    this.pane.fitCanvas({ w: 800, h: DEFAULT_HEIGHT });
    void this.sync.deliverGraph(); // decoded off this call: setGraph(payload, initial) follows

    exposeDebug(
      [el, this.root],
      this.renderer,
      () => ({
        layouts: this.layouts,
        layoutCount: this.layoutCount,
        view: this.viewName,
        expanded: this.expanded,
        selected: this.selected,
      }),
      () => (this.pane.minimap.canvas.hidden ? null : this.pane.minimap.canvas),
    );
  }

  // the view state, read from the store
  get viewName(): ViewName {
    return this.store.state.view;
  }

  get expanded(): ReadonlySet<string> {
    return this.store.state.expanded;
  }

  get selected(): string {
    return this.store.state.selected;
  }

  get showParams(): boolean {
    return this.store.state.showParams;
  }

  /** The host switched themes: recolour the graph, its legend and the inspector's plots. */
  private setTheme(t: Theme): void {
    this.theme = t;
    this.root.classList.toggle("lens-dark", t.dark);
    this.pane.setTheme(t);
    this.inspector.redraw();
  }

  // ---- graph and view ----

  getModel(view: ViewName): GraphModel | null {
    return this.views?.get(view) ?? null;
  }

  get current(): GraphModel | null {
    return this.getModel(this.viewName);
  }

  private setGraph(payload: GraphPayload | null, initial = false): void {
    // another rank's values on the same graph: the layout and the camera stay
    const sameLayout = sameRankGraph(this.views?.payload ?? null, payload);
    this.ranks.show(payload?.ranks);
    this.views = payload ? new GraphViews(payload) : null;
    this.trail.clear();
    this.overlay.setGraph(payload, this.grads.setGraph(payload));
    this.ablationBanner.show(payload?.ablation);
    this.layouts.clear();
    this.vis = null;
    this.renderer.frame = null;
    const m = this.current;
    if (!m || !payload) {
      this.toolbar.showTitle(null, 0);
      this.renderer.request();
      return;
    }
    this.sizes = new SizeCache(m, this.metrics);
    this.toolbar.showTitle(payload.modelClass, payload.nOps);
    this.banner.showForwardError(payload.error, payload.failedOp, (op) =>
      this.select(this.mapId(op, "unrolled", this.viewName), { center: true }),
    );
    const sel = this.selected && m.nodes.has(this.selected) ? this.selected : "";
    this.store.update({ camera: sameLayout ? KEEP : FIT });
    if (initial && this.expanded.size === 0) {
      const { levels, lowest } = expansionLevels(m, this.showParams);
      // with a selection the view opens on it: no need to look for a whole view
      if (!sel)
        this.store.update({ camera: { kind: "search", search: new FitSearch(levels, lowest, growCandidates(m)) } });
      this.store.update({ expanded: new Set(levels[levels.length - 1]) });
      if (sel) this.sync.writeExpanded(this.expanded);
    }
    this.store.update({ selected: "" });
    if (sel) this.select(sel, { center: !sameLayout, origin: "kernel" });
    else {
      this.inspector.show(m, null);
      this.refresh();
    }
  }

  /** The node of `to` that stands for `id` of `from` (a layer for a pass, the first pass for a layer). */
  mapId(id: string, from: ViewName, to: ViewName): string {
    if (!id || from === to) return id;
    return this.views?.counterpart(id, from, to) ?? "";
  }

  setView(view: ViewName, origin: Origin): void {
    switchView(this, view, origin);
  }

  // ---- expansion and layout ----

  setExpanded(next: Set<string>, after?: () => void): void {
    this.store.update({ expanded: next });
    this.sync.writeExpanded(next);
    this.refresh(after);
  }

  /** Lays out what is visible now (in the worker, for the boxes not laid out before), then shows it. */
  refresh(after?: () => void): void {
    const m = this.current;
    if (!m || !this.sizes) return;
    const vis = computeVisible(m, { expanded: this.expanded, showParams: this.showParams });
    // no height set: the graph fills the notebook's visible height, before it is laid out for it
    if (this.heightHandle.fitHost(this.root)) this.pane.fitCanvas({ w: this.root.clientWidth, h: DEFAULT_HEIGHT });
    // a tall chain wraps into columns in a wide widget: from the widget's width (not the
    // canvas's, which an inspector opening narrows) and the graph's height
    const wrap = this.wrap();
    this.wrapKey = wrapKey(wrap);
    const prefix = `${this.viewName}|${this.showParams ? 1 : 0}|${this.wrapKey}|`;
    this.layouts.run(
      { vis, model: m, sizes: this.sizes, prefix, wrap, inline: !this.painted },
      (laid) => this.apply(m, vis, laid, after),
      () => this.current === m,
    );
  }

  private wrap(): Wrap | null {
    return wrapFor(this.root.clientWidth, this.pane.el.clientHeight || DEFAULT_HEIGHT);
  }

  /** The widget changed size: lay out again where its wrap of tall chains changed (columns.ts). */
  private resized(): void {
    if (wrapKey(this.wrap()) !== this.wrapKey && this.renderer.frame) this.refresh();
  }

  private apply(m: GraphModel, vis: Visible, laid: Laid, after?: () => void): void {
    this.pane.settle(); // the canvas takes the size a panel opening put off (narrowBeside)
    const search = this.store.search;
    if (search) {
      const floor = (e: string[]): number =>
        heightFloor(computeVisible(m, { expanded: new Set(e), showParams: this.showParams }), this.sizes!);
      const next = nextExpansion(search, laid.scene.bounds, this.renderer, floor);
      if (next) {
        this.store.update({ expanded: new Set(next) });
        return this.refresh(after);
      }
      if (openRolledInstead(this, laid.scene.bounds)) return;
      this.store.update({ camera: FIT }); // found: fit it
      this.sync.writeExpanded(this.expanded);
    }
    this.vis = vis;
    this.renderer.frame = { model: m, vis, ...laid };
    notePassThrough(this);
    this.renderer.selected = this.selected ? (vis.rep.get(this.selected) ?? null) : inspectedBox(this, vis);
    this.layoutCount++;
    placeCamera(this.store.takeCamera(), this.renderer, vis, laid.scene);
    after?.();
    if (!this.painted) {
      // the first frame is drawn now, not on the next animation frame, so it can be timed
      this.painted = true;
      this.renderer.draw();
      performance.mark("lens:first-paint", { detail: { items: vis.items.length } });
      preloadPlots(); // evaluated after first paint, ready by the first click
    }
    this.renderer.request();
    this.updateStatus();
  }

  // ---- selection (wiring/selection.ts) ----

  select(id: string, opts: SelectOptions): void {
    selectIn(this, id, opts);
  }

  selectUnrolled(id: string, as: SelectAs = "node"): void {
    selectUnrolledIn(this, id, as);
  }

  /** Downloads what the canvas shows now as an SVG. */
  private exportSvg(): void {
    const title = `${this.views?.payload.modelClass ?? "graph"} (${this.viewName})`;
    downloadViewSvg(this.renderer, this.theme, title, this.root);
  }

  private updateStatus(): void {
    this.toolbar.showStatus(this.kernelStatus || this.link.status());
    this.pane.showBusy(this.layouts.busy > 0);
    this.root.dataset.layout = this.layouts.busy ? "running" : "idle";
  }

  dispose(): void {
    this.unwatchTheme();
    this.unbindInput();
    this.heightHandle.dispose();
    this.sync.dispose();
    this.link.dispose();
    this.pane.dispose();
    this.requests.dispose();
    this.layouts.dispose();
    this.inspector.dispose();
    this.monitor.dispose();
    this.root.remove();
  }
}
