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
import { OverlayControl } from "./controls/overlayControl";
import { Toolbar } from "./controls/toolbar";
import { ViewHint } from "./controls/viewHint";
import { exposeDebug } from "./debugHook";
import { expansionLevels } from "./graph/defaultExpansion";
import { opensRolled, rolledHint } from "./graph/firstViewChoice";
import { GraphViews } from "./graph/graphViews";
import type { GraphPayload, ViewName } from "./graph/protocol";
import { type SearchHit, search } from "./graph/search";
import { type GraphModel, SOURCE_KINDS } from "./graph/tree";
import {
  allGroups,
  closedAbove,
  closedAround,
  computeVisible,
  GROUP_PREFIX,
  toggledGroup,
  type Visible,
} from "./graph/visibility";
import { type KernelLink, notebookLink } from "./kernel/kernelLink";
import { RequestClient } from "./kernel/messages";
import { type Origin, resolveSelection, selectionAfterSwitch, TraitSync } from "./kernel/traitSync";
import type { WidgetModel } from "./kernel/widgetModel";
import { type Wrap, wrapFor } from "./layout/columns";
import { DEFAULT_METRICS, type Metrics, measureMetrics } from "./layout/labels";
import { type Laid, LayoutRunner } from "./layout/sceneLayout";
import { heightFloor, type Rect, SizeCache } from "./layout/scenePlan";
import { MonitorView } from "./monitor/monitorView";
import { Inspector } from "./panel/inspector";
import { injectPanelLayout } from "./panel/panelLayout";
import { preloadPlots } from "./panel/plots";
import { sameRankGraph } from "./ranks/rankLogic";
import { RankPicker } from "./ranks/rankPicker";
import { pickAnchor } from "./render/anchor";
import { FitSearch, wholeScale } from "./render/camera";
import { nextExpansion, placeCamera } from "./render/cameraPlan";
import { CameraTrail } from "./render/cameraTrail";
import { h } from "./render/dom";
import { GraphPane } from "./render/graphPane";
import type { Renderer } from "./render/renderer";
import { injectStyles } from "./render/styles";
import { downloadViewSvg } from "./render/svgExport";
import { pickTheme, type Theme, watchTheme } from "./render/theme";
import { FIT, KEEP, ViewStore } from "./state/viewStore";

export interface AppOptions {
  /** Who answers requests; by default the kernel of the widget's notebook (see notebookLink). */
  link?: KernelLink;
}

export class LensApp {
  readonly root: HTMLElement;
  private theme: Theme;
  private metrics: Metrics = DEFAULT_METRICS;
  private views: GraphViews | null = null;
  private readonly store = new ViewStore();
  private kernelStatus = "";
  private vis: Visible | null = null;
  private sizes: SizeCache | null = null;
  private layoutCount = 0;
  private painted = false;
  private layouts = new LayoutRunner(
    () => this.updateStatus(),
    (e) => this.banner.showLayoutError(e.message),
  );
  private sync: TraitSync;
  private requests: RequestClient;
  private pane: GraphPane;
  private renderer: Renderer;
  private inspector: Inspector;
  private toolbar: Toolbar;
  private banner = new Banner();
  private viewHint = new ViewHint();
  private ablationBanner = new AblationBanner(() => this.requests.endAblation());
  private unwatchTheme: () => void;
  private unbindInput: () => void;
  private overlay: OverlayControl;
  private monitor: MonitorView;
  private grads = new GradientControl((id, as) => this.selectUnrolled(id, as));
  // several ranks' logs (LensWidget.from_logs): which rank is shown, compared with which
  private ranks = new RankPicker({
    showRank: (params) => this.requests.request({ method: "showRank", params }, { timeoutMs: 120000 }),
    onPage: () => !!this.link.noRerun,
  });
  private link: KernelLink;
  private heightHandle: HeightHandle;
  private wrapKey = ""; // the wrap of tall chains the last layout used
  private trail = new CameraTrail(); // where the camera was before each module opened

  constructor(model: WidgetModel, el: HTMLElement, opts: AppOptions = {}) {
    injectStyles(el.ownerDocument);
    injectPanelLayout(el.ownerDocument);
    this.theme = pickTheme(el);
    this.root = h("div", "lens-root");
    this.root.dataset.testid = "lens-root";
    el.appendChild(this.root);

    this.toolbar = new Toolbar({
      fit: () => this.pane.fit(),
      expandAll: () => this.expandAll(),
      collapseAll: () => this.collapseAll(),
      setView: (view) => this.setView(view, "user"),
      showShapes: (on) => this.pane.showShapes(on),
      showParams: (on) => {
        this.store.update({ showParams: on });
        this.refresh();
      },
      exportSvg: () => this.exportSvg(),
      search: (query) => (this.current ? search(this.current, query, 30, this.showParams) : []),
      jump: (hit) => this.jump(hit),
    });

    const main = h("div", "lens-main");
    this.heightHandle = new HeightHandle(model, main); // the height trait, and a handle to drag it
    this.pane = new GraphPane(this.theme);
    this.renderer = this.pane.renderer;
    this.pane.onResize = () => this.resized();
    this.inspector = new Inspector({
      theme: () => this.theme,
      select: (id) => this.select(id, { center: true }),
      close: () => this.select("", {}),
      // in a comparison the overlay bar picks the side plotted: A, B or A−B
      fetchActivation: (p, onSlow) =>
        this.requests.activation(
          this.overlay.inCompare && p.value !== "grad" ? { ...p, side: this.overlay.side } : p,
          onSlow,
        ),
      fetchAttention: (p, onSlow) => this.requests.attention(p, onSlow),
      rerun: (id, onWaiting) => this.requests.rerun(id, onWaiting),
      noRerun: () => this.link.noRerun ?? this.views?.payload.noRerun ?? null,
      ablate: (p, onWaiting) => this.requests.ablate(p, onWaiting),
      unrolledNode: (id) => this.getModel("unrolled")?.nodes.get(id),
      unrolledParents: (id) => this.getModel("unrolled")?.parents.get(id) ?? [],
      gradients: () => this.grads.gradients,
      noSide: (id) => this.overlay.noSide(id),
      sideLabel: () => this.overlay.sideLabel,
      fetchOpDetails: (id) => this.requests.opDetails(id),
      fetchModuleDetails: (address) => this.requests.moduleDetails(address),
      // a parameter (a call's weight) is shown first where parameters are hidden
      selectUnrolled: (id) => {
        const kind = this.getModel("unrolled")?.nodes.get(id)?.kind ?? "";
        this.selectUnrolled(id, SOURCE_KINDS.has(kind) ? "leaf" : "node");
      },
    });
    main.append(this.pane.el, this.inspector.el, this.grads.panel.el);
    this.overlay = new OverlayControl({
      requests: () => this.requests,
      frame: () => this.renderer.frame,
      repaint: () => this.renderer.request(),
      selectUnrolled: (id) => this.selectUnrolled(id),
      sideChanged: () => this.current && this.selected && this.inspector.show(this.current, this.selected),
      metricPicked: () => this.monitor.metricPicked(),
    });
    this.renderer.overlay = this.overlay;
    this.overlay.picker.el.insertBefore(this.grads.button, this.overlay.picker.legend.el);
    this.monitor = new MonitorView(model, {
      requests: () => this.requests,
      showValues: (ext) => this.overlay.showExternal(ext),
      selectUnrolled: (id) => this.selectUnrolled(id),
      theme: () => this.theme,
    });
    this.store.subscribe(["selected"], (s) => this.monitor.select(this.mapId(s.selected, s.view, "unrolled")));
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
        toggleGroup: (key, expand) => this.toggleGroup(key, expand),
        select: (id) => this.select(id, {}),
        // a click on a module (its box or its title) selects it: its inspector opens, and the
        // graph it narrows keeps what was clicked where it was (toggleGroup's hold, then reveal)
        inspectGroup: (key) => this.inspectGroup(key),
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
        layoutsRunning: this.layouts.busy,
        layoutCount: this.layoutCount,
        usesWorker: this.layouts.usesWorker,
        view: this.viewName,
        expanded: this.expanded,
        selected: this.selected,
      }),
      () => (this.pane.minimap.canvas.hidden ? null : this.pane.minimap.canvas),
    );
  }

  // the view state, read from the store
  private get viewName(): ViewName {
    return this.store.state.view;
  }

  private get expanded(): ReadonlySet<string> {
    return this.store.state.expanded;
  }

  private get selected(): string {
    return this.store.state.selected;
  }

  private get showParams(): boolean {
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

  private getModel(view: ViewName): GraphModel | null {
    return this.views?.get(view) ?? null;
  }

  private get current(): GraphModel | null {
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
      if (!sel) this.store.update({ camera: { kind: "search", search: new FitSearch(levels, lowest) } });
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
  private mapId(id: string, from: ViewName, to: ViewName): string {
    if (!id || from === to) return id;
    return this.views?.counterpart(id, from, to) ?? "";
  }

  private setView(view: ViewName, origin: Origin): void {
    if (view === this.viewName) return;
    this.viewHint.hide(); // the view is the user's (or the kernel's) choice now
    const f = this.renderer.frame;
    const r = this.renderer;
    const anchor = f && !this.store.search ? pickAnchor(f, r.cam, r.width, r.height, r.selected) : null;
    const from = this.viewName;
    const kernelSelected = origin === "kernel" ? this.sync.selected : "";
    const kernelInView = !!kernelSelected && !!this.getModel(view)?.nodes.has(kernelSelected);
    // the op inspected goes to the pass its inspector shows, not to the layer's first pass
    const shown = this.selected && this.selected === this.inspector.nodeId ? this.inspector.shownPass : null;
    const mapSel = (id: string): string =>
      id === this.selected && shown && view === "unrolled" ? shown : this.mapId(id, from, view);
    const sel = selectionAfterSwitch(mapSel(this.selected), kernelSelected, kernelInView, origin);
    this.store.update({ view });
    this.trail.clear();
    if (origin === "user") this.sync.writeView(view);
    const m = this.current;
    if (!m) return;
    this.sizes = new SizeCache(m, this.metrics);
    // a block open in the rolled view shows in the unrolled one: open the stack that holds it
    const stacks = view === "unrolled" ? (this.views?.stacksToOpen(this.expanded) ?? []) : [];
    if (stacks.length) {
      this.store.update({ expanded: new Set([...this.expanded, ...stacks]) });
      this.sync.writeExpanded(this.expanded);
    }
    // a first view still looking for what fits goes on looking in the new view
    if (!this.store.search) {
      this.store.update({
        camera: anchor ? { kind: "anchor", anchor: { ...anchor, node: mapSel(anchor.node) } } : FIT,
      });
    }
    const anchored = this.store.state.camera.kind === "anchor";
    this.store.update({ selected: "" });
    this.vis = null; // the other view's visible set: select() must lay out the new view
    // the switched-to selection is written even when the kernel switched: it may be a mapped id the kernel lacks
    if (sel) this.select(sel, { center: !anchored });
    else {
      this.inspector.show(m, null);
      if (origin === "user") this.sync.writeSelected("");
      this.refresh();
    }
  }

  // ---- expansion and layout ----

  private setExpanded(next: Set<string>, after?: () => void): void {
    this.store.update({ expanded: next });
    this.sync.writeExpanded(next);
    this.refresh(after);
  }

  private toggleGroup(key: string, expand: boolean): void {
    const next = this.current && toggledGroup(this.current, key, expand, this.expanded);
    if (!next) return;
    // the clicked module stays where it was on screen, then what opened comes into view;
    // closing it returns to where the camera was before it opened
    const hold = this.renderer.holdOnScreen(key);
    const back = expand ? null : this.trail.closed(key);
    if (expand) this.trail.opened(key, this.renderer.cam);
    this.setExpanded(next, () => {
      if (back) this.renderer.cam = back;
      else hold();
      this.renderer.reveal(key);
    });
  }

  private expandAll(): void {
    if (!this.current) return;
    this.trail.clear();
    this.fitNext();
    this.setExpanded(allGroups(this.current));
  }

  private collapseAll(): void {
    this.trail.clear();
    this.fitNext();
    this.setExpanded(new Set());
  }

  /** The next layout fits the graph on screen (a first view's search already ends in a fit). */
  private fitNext(): void {
    if (!this.store.search) this.store.update({ camera: FIT });
  }

  /** The camera moved to what the user asked for: the next layout leaves it there. */
  private keepCamera(): void {
    if (this.store.state.camera.kind === "fit") this.store.update({ camera: KEEP });
  }

  /** Lays out what is visible now (in the worker, for the boxes not laid out before), then shows it. */
  private refresh(after?: () => void): void {
    const m = this.current;
    if (!m || !this.sizes) return;
    const vis = computeVisible(m, { expanded: this.expanded, showParams: this.showParams });
    // no height set: the graph fills the notebook's visible height, before it is laid out for it
    if (this.heightHandle.fitHost(this.root)) this.pane.fitCanvas({ w: this.root.clientWidth, h: DEFAULT_HEIGHT });
    // a tall chain wraps into columns in a wide widget: from the widget's width (not the
    // canvas's, which an inspector opening narrows) and the graph's height
    const wrap = this.wrap();
    this.wrapKey = wrap ? `${wrap.w}x${wrap.h}` : "";
    const prefix = `${this.viewName}|${this.showParams ? 1 : 0}|${this.wrapKey}|`;
    this.layouts.run(
      { vis, model: m, sizes: this.sizes, prefix, wrap },
      (laid) => this.apply(m, vis, laid, after),
      () => this.current === m,
    );
  }

  private wrap(): Wrap | null {
    return wrapFor(this.root.clientWidth, this.pane.el.clientHeight || DEFAULT_HEIGHT);
  }

  /** The widget changed size: lay out again where its wrap of tall chains changed (columns.ts). */
  private resized(): void {
    const wrap = this.wrap();
    if ((wrap ? `${wrap.w}x${wrap.h}` : "") !== this.wrapKey && this.renderer.frame) this.refresh();
  }

  private apply(m: GraphModel, vis: Visible, laid: Laid, after?: () => void): void {
    const search = this.store.search;
    if (search) {
      const floor = (e: string[]): number =>
        heightFloor(computeVisible(m, { expanded: new Set(e), showParams: this.showParams }), this.sizes!);
      const next = nextExpansion(search, laid.scene.bounds, this.renderer, floor);
      if (next) {
        this.store.update({ expanded: new Set(next) });
        return this.refresh(after);
      }
      if (this.openRolledInstead(laid.scene.bounds)) return;
      this.store.update({ camera: FIT }); // found: fit it
      this.sync.writeExpanded(this.expanded);
    }
    this.vis = vis;
    this.renderer.frame = { model: m, vis, ...laid };
    this.renderer.selected = this.selected ? (vis.rep.get(this.selected) ?? null) : this.inspectedBox(vis);
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

  /**
   * A recurrent model whose unrolled first view does not fit opens rolled (firstViewChoice.ts),
   * with a hint saying why; the view goes to the kernel (`w.view`). False: it stays unrolled.
   */
  private openRolledInstead(bounds: Rect): boolean {
    const payload = this.views?.payload;
    const r = this.renderer;
    if (!payload || this.viewName !== "unrolled" || !opensRolled(payload, wholeScale(bounds, r.width, r.height)))
      return false;
    const rolled = this.getModel("rolled");
    if (!rolled) return false;
    this.viewHint.show(rolledHint(payload), () => this.setView("unrolled", "user"));
    const { levels, lowest } = expansionLevels(rolled, this.showParams);
    this.store.update({
      view: "rolled",
      expanded: new Set(levels[levels.length - 1]),
      camera: { kind: "search", search: new FitSearch(levels, lowest) },
    });
    this.sync.writeView("rolled");
    this.sizes = new SizeCache(rolled, this.metrics);
    this.vis = null;
    this.refresh();
    return true;
  }

  // ---- selection ----

  private select(id: string, opts: { center?: boolean; origin?: Origin }): void {
    const m = this.current;
    if (!m) return;
    const next = resolveSelection(id, m.nodes.has(id), opts.origin ?? "user");
    if (!next) return;
    id = next.id;
    this.store.update({ selected: id });
    this.renderer.selectedBox = null; // an op, or nothing: no module inspected
    if (next.write) this.sync.writeSelected(id);
    this.inspector.show(m, id || null);
    const focus = (): void => {
      if (this.renderer.focusNode(id, !!opts.center)) this.keepCamera();
    };
    const need = id ? closedAround(m, id, this.expanded) : [];
    if (need.length) this.setExpanded(new Set([...this.expanded, ...need]), focus);
    else if (!this.vis || this.vis !== this.renderer.frame?.vis) this.refresh(focus);
    else focus();
  }

  /** Selects a node by its unrolled id in the view shown: a leaf showing parameters if hidden, an op plotting its gradient. */
  private selectUnrolled(id: string, as: SelectAs = "node"): void {
    if (as === "gradient") this.inspector.showGradient(id);
    if (as === "leaf" && this.toolbar.revealParams()) this.vis = null; // lay out again, with the parameters
    this.select(this.mapId(id, "unrolled", this.viewName), { center: true });
  }

  private focusGroup(key: string): void {
    const m = this.current;
    if (!m) return;
    const need = closedAbove(m, key, this.expanded);
    const focus = (): void => {
      if (this.renderer.focusGroup(key)) this.keepCamera();
    };
    if (need.length) this.setExpanded(new Set([...this.expanded, ...need]), focus);
    else focus();
  }

  private jump(hit: SearchHit): void {
    if (hit.kind === "node") return this.select(hit.id, { center: true });
    this.select("", {}); // a module, not the op shown before: its own inspector follows
    this.focusGroup(hit.id);
    this.inspectGroup(hit.id);
  }

  /** The module inspector of group `key` (a module's box or title was clicked, or found). */
  private inspectGroup(key: string): void {
    const m = this.current;
    const g = m?.groups.get(key);
    if (!m || !g) return;
    // a ×N stack of identical blocks: the first block's facts, saying it stands for all
    const stack = g.kind === "stack" && g.members.length > 0;
    if (g.kind !== "module" && !stack) return;
    if (this.selected) this.select("", {});
    const shown = stack
      ? { address: g.members[0], pass: null, note: `the first of ${g.members.length} blocks folded here` }
      : { address: g.address, pass: g.pass };
    const opening = this.inspector.el.hidden;
    this.inspector.showModule(m, { ...shown, key }, g.className);
    // the canvas narrows now, not on the next resize event: a layout under way holds what was
    // clicked in place in the narrowed canvas
    if (opening) this.pane.fitCanvas({ w: this.renderer.width, h: this.renderer.height });
    this.renderer.selected = this.vis ? this.inspectedBox(this.vis) : null;
    this.renderer.selectedBox = key;
    this.renderer.request();
  }

  /** The collapsed module whose inspector is open, marked as a selected node is; null when
   * none is, or it is open (its box is drawn as it was). */
  private inspectedBox(vis: Visible): string | null {
    const key = this.inspector.moduleShown?.key;
    return key && vis.itemById.has(GROUP_PREFIX + key) ? GROUP_PREFIX + key : null;
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
