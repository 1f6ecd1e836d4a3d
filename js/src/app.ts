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
import type { Toolbar } from "./controls/toolbar";
import { ViewHint } from "./controls/viewHint";
import { exposeDebug } from "./debugHook";
import type { GraphViews } from "./graph/graphViews";
import type { ViewName } from "./graph/protocol";
import type { GraphModel } from "./graph/tree";
import type { Visible } from "./graph/visibility";
import { type KernelLink, notebookLink } from "./kernel/kernelLink";
import { RequestClient } from "./kernel/messages";
import type { Origin, TraitSync } from "./kernel/traitSync";
import type { WidgetModel } from "./kernel/widgetModel";
import { DEFAULT_METRICS, type Metrics, measureMetrics } from "./layout/labels";
import type { SizeCache } from "./layout/scenePlan";
import type { MonitorView } from "./monitor/monitorView";
import type { Inspector } from "./panel/inspector";
import { RankPicker } from "./ranks/rankPicker";
import { CameraTrail } from "./render/cameraTrail";
import { h } from "./render/dom";
import { GraphPane } from "./render/graphPane";
import type { Renderer } from "./render/renderer";
import { scopeStyles } from "./render/styleScope";
import { pickTheme, type Theme, watchTheme } from "./render/theme";
import { ViewStore } from "./state/viewStore";
import type { SelectOptions } from "./wiring/appHost";
import { openDown, toggleGroup } from "./wiring/cameraMoves";
import { createToolbar, syncTraits } from "./wiring/controllerParts";
import { type GraphHost, showGraph } from "./wiring/graphLoad";
import { createInspector } from "./wiring/inspectorWiring";
import { LayoutPass } from "./wiring/layoutPass";
import { createMonitor, createOverlay } from "./wiring/overlayWiring";
import { inspectGroup, select as selectIn, selectUnrolled as selectUnrolledIn } from "./wiring/selection";
import { switchView } from "./wiring/viewSwitch";

export interface AppOptions {
  /** Who answers requests; by default the kernel of the widget's notebook (see notebookLink). */
  link?: KernelLink;
}

// the members the split-out parts use (wiring/appHost.ts) are public; the rest stay private
export class LensApp implements GraphHost {
  readonly root: HTMLElement;
  theme: Theme;
  metrics: Metrics = DEFAULT_METRICS;
  views: GraphViews | null = null;
  readonly store = new ViewStore();
  private kernelStatus = "";
  vis: Visible | null = null;
  sizes: SizeCache | null = null;
  layout: LayoutPass;
  sync: TraitSync;
  requests: RequestClient;
  pane: GraphPane;
  renderer: Renderer;
  inspector: Inspector;
  toolbar: Toolbar;
  readonly banner = new Banner();
  viewHint = new ViewHint();
  readonly ablationBanner = new AblationBanner(() => this.requests.endAblation());
  private unwatchTheme: () => void;
  private unbindInput: () => void;
  overlay: OverlayControl;
  monitor: MonitorView;
  grads = new GradientControl((id, as) => this.selectUnrolled(id, as));
  // several ranks' logs (LensWidget.from_logs): which rank is shown, compared with which
  readonly ranks = new RankPicker({
    showRank: (params) => this.requests.request({ method: "showRank", params }, { timeoutMs: 120000 }),
    onPage: () => !!this.link.noRerun,
  });
  link: KernelLink;
  private heightHandle: HeightHandle;
  trail = new CameraTrail(); // where the camera was before each module opened

  constructor(model: WidgetModel, el: HTMLElement, opts: AppOptions = {}) {
    scopeStyles(el); // in el itself: it applies wherever the host puts el (render/styleScope.ts)
    this.theme = pickTheme(el);
    this.root = h("div", "lens-root");
    this.root.dataset.testid = "lens-root";
    el.appendChild(this.root);

    this.toolbar = createToolbar(this);

    const main = h("div", "lens-main");
    this.heightHandle = new HeightHandle(model, main); // the height trait, and a handle to drag it
    this.layout = new LayoutPass(
      this,
      this.root,
      this.heightHandle,
      () => this.updateStatus(),
      (e) => this.banner.showLayoutError(e.message),
    );
    this.pane = new GraphPane(this.theme);
    this.renderer = this.pane.renderer;
    this.pane.onResize = () => this.layout.resized();
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

    this.sync = syncTraits(this, model, {
      graph: (payload, initial) => showGraph(this, payload, initial),
      graphError: (message) => this.banner.showGraphError(message),
      status: (text) => {
        this.kernelStatus = text;
        this.updateStatus();
      },
    });
    this.kernelStatus = this.sync.status;
    this.toolbar.showView(this.viewName);
    this.store.subscribe(["view"], (s) => this.toolbar.showView(s.view));
    this.pane.fitCanvas({ w: 800, h: DEFAULT_HEIGHT });
    void this.sync.deliverGraph(); // decoded off this call: showGraph (graphLoad.ts) follows

    exposeDebug(
      [el, this.root],
      this.renderer,
      () => ({
        layouts: this.layout.runner,
        layoutCount: this.layout.count,
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

  /** Lays out what is visible now, then shows it (wiring/layoutPass.ts). */
  refresh(after?: () => void): void {
    this.layout.refresh(after);
  }

  // ---- selection (wiring/selection.ts) ----

  select(id: string, opts: SelectOptions): void {
    selectIn(this, id, opts);
  }

  selectUnrolled(id: string, as: SelectAs = "node"): void {
    selectUnrolledIn(this, id, as);
  }

  private updateStatus(): void {
    this.toolbar.showStatus(this.kernelStatus || this.link.status());
    const busy = this.layout.runner.busy;
    this.pane.showBusy(busy > 0);
    this.root.dataset.layout = busy ? "running" : "idle";
  }

  dispose(): void {
    this.unwatchTheme();
    this.unbindInput();
    this.heightHandle.dispose();
    this.sync.dispose();
    this.link.dispose();
    this.pane.dispose();
    this.requests.dispose();
    this.layout.runner.dispose();
    this.inspector.dispose();
    this.monitor.dispose();
    this.root.remove();
  }
}
