// The widget controller: owns the state (view, expansion, selection) and runs the pipeline
// kernel traits -> model -> layout -> render, wiring the toolbar, search box, canvas input
// and inspector to it. Trait sync rules live in kernel/traitSync.ts.
import { Banner } from "./controls/banner";
import { bindCanvasInput } from "./controls/canvasInput";
import { SearchBox } from "./controls/searchBox";
import { Toolbar } from "./controls/toolbar";
import { exposeDebug } from "./debugHook";
import { RequestClient } from "./kernel/messages";
import { type Origin, resolveSelection, selectionAfterSwitch, TraitSync } from "./kernel/traitSync";
import type { WidgetModel } from "./kernel/widgetModel";
import { DEFAULT_METRICS, measureMetrics, type Metrics } from "./layout/labels";
import { SizeCache } from "./layout/layoutPlan";
import { type Laid, LayoutRunner } from "./layout/layoutRunner";
import { defaultExpansion } from "./model/defaultExpansion";
import { GraphViews } from "./model/graphViews";
import type { GraphPayload, ViewName } from "./model/protocol";
import { search, type SearchHit } from "./model/search";
import { ancestorAddresses, type GraphModel, groupAncestorAddresses, ROOT } from "./model/tree";
import { GROUP_PREFIX, computeVisible, type Visible } from "./model/visibility";
import { Inspector } from "./panel/inspector";
import { preloadPlots } from "./panel/plots";
import { h } from "./render/dom";
import { GraphPane } from "./render/graphPane";
import type { Hit } from "./render/hitTest";
import type { Renderer } from "./render/renderer";
import { injectStyles } from "./render/styles";
import { pickTheme, type Theme } from "./render/theme";

const GRAPH_HEIGHT = 620;

export class LensApp {
  readonly root: HTMLElement;
  private theme: Theme;
  private metrics: Metrics = DEFAULT_METRICS;
  private views: GraphViews | null = null;
  private viewName: ViewName = "unrolled";
  private expanded = new Set<string>();
  private showParams = false;
  private selected = "";
  private kernelStatus = "";
  private vis: Visible | null = null;
  private sizes: SizeCache | null = null;
  private layoutCount = 0;
  private firstPaint = true; // fit the camera on the next layout
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

  constructor(model: WidgetModel, el: HTMLElement) {
    injectStyles(el.ownerDocument);
    this.theme = pickTheme(el);
    this.root = h("div", "lens-root");
    this.root.dataset.testid = "lens-root";
    el.appendChild(this.root);

    const searchBox = new SearchBox(
      (query) => {
        const m = this.current;
        return m ? search(m, query, 30, this.showParams) : [];
      },
      (hit) => this.jump(hit),
    );
    this.toolbar = new Toolbar(
      {
        fit: () => this.fit(),
        expandAll: () => this.expandAll(),
        collapseAll: () => this.collapseAll(),
        setView: (view) => this.setView(view, "user"),
        showShapes: (on) => {
          this.renderer.showShapes = on;
          this.renderer.request();
        },
        showParams: (on) => {
          this.showParams = on;
          this.refresh();
        },
      },
      searchBox.el,
    );

    const main = h("div", "lens-main");
    main.style.height = `${GRAPH_HEIGHT}px`;
    this.pane = new GraphPane(this.theme);
    this.renderer = this.pane.renderer;
    this.inspector = new Inspector({
      theme: () => this.theme,
      select: (id) => this.select(id, { center: true }),
      close: () => this.select("", {}),
      fetchActivation: (p, onSlow) => this.requests.activation(p, onSlow),
      rerun: (id) => this.requests.rerun(id),
      unrolledNode: (id) => this.getModel("unrolled")?.nodes.get(id),
    });
    main.append(this.pane.el, this.inspector.el);
    this.root.append(this.toolbar.el, this.banner.el, main);
    this.metrics = measureMetrics(this.pane.canvas) ?? DEFAULT_METRICS;

    this.requests = new RequestClient(model);
    bindCanvasInput(this.pane.canvas, this.renderer, (hit) => this.click(hit));

    this.sync = new TraitSync(model, () => ({ view: this.viewName, selected: this.selected, expanded: this.expanded }), {
      graph: (payload, initial) => this.setGraph(payload, initial),
      graphError: (message) => this.banner.showGraphError(message),
      view: (view) => this.setView(view, "kernel"),
      selected: (id) => this.select(id, { center: true, origin: "kernel" }),
      expanded: (next) => {
        this.expanded = next;
        this.refresh();
      },
      status: (text) => {
        this.kernelStatus = text;
        this.updateStatus();
      },
    });
    this.viewName = this.sync.view;
    this.expanded = this.sync.expanded;
    this.selected = this.sync.selected;
    this.kernelStatus = this.sync.status;
    this.toolbar.showView(this.viewName);
    this.pane.fitCanvas({ w: 800, h: GRAPH_HEIGHT });
    void this.sync.deliverGraph(); // decoded off this call: setGraph(payload, initial) follows

    exposeDebug([el, this.root], this.renderer, () => ({
      layoutsRunning: this.layouts.busy,
      layoutCount: this.layoutCount,
      usesWorker: this.layouts.usesWorker,
      view: this.viewName,
      expanded: this.expanded,
      selected: this.selected,
    }));
  }

  // ---- graph and view ----

  private getModel(view: ViewName): GraphModel | null {
    return this.views?.get(view) ?? null;
  }

  private get current(): GraphModel | null {
    return this.getModel(this.viewName);
  }

  private setGraph(payload: GraphPayload | null, initial = false): void {
    this.views = payload ? new GraphViews(payload) : null;
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
    if (initial && this.expanded.size === 0) {
      this.expanded = new Set(defaultExpansion(m, this.showParams));
      this.sync.writeExpanded(this.expanded);
    }
    this.firstPaint = true;
    const sel = this.selected && m.nodes.has(this.selected) ? this.selected : "";
    this.selected = "";
    if (sel) this.select(sel, { center: true, origin: "kernel" });
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
    const kernelSelected = origin === "kernel" ? this.sync.selected : "";
    const kernelInView = !!kernelSelected && !!this.getModel(view)?.nodes.has(kernelSelected);
    const sel = selectionAfterSwitch(this.mapId(this.selected, this.viewName, view), kernelSelected, kernelInView, origin);
    this.viewName = view;
    this.toolbar.showView(view);
    if (origin === "user") this.sync.writeView(view);
    const m = this.current;
    if (!m) return;
    this.sizes = new SizeCache(m, this.metrics);
    this.firstPaint = true;
    this.selected = "";
    this.vis = null; // the other view's visible set: select() must lay out the new view
    // the switched-to selection is written even when the kernel switched: it may be a mapped id the kernel lacks
    if (sel) this.select(sel, { center: true });
    else {
      this.inspector.show(m, null);
      if (origin === "user") this.sync.writeSelected("");
      this.refresh();
    }
  }

  // ---- expansion and layout ----

  private setExpanded(next: Set<string>, after?: () => void): void {
    this.expanded = next;
    this.sync.writeExpanded(next);
    this.refresh(after);
  }

  private toggleGroup(key: string, expand: boolean): void {
    const m = this.current;
    const g = m?.groups.get(key);
    if (!m || !g) return;
    // keep the clicked module where it was on screen
    const r = this.renderer;
    const before = r.frame?.scene.items.get(GROUP_PREFIX + key) ?? r.frame?.scene.boxes.get(key);
    const anchor = before ? r.toScreen(before.x + before.w / 2, before.y) : null;
    const next = new Set(this.expanded);
    if (expand) next.add(g.address);
    else next.delete(g.address);
    this.setExpanded(next, () => {
      const after = r.frame?.scene.boxes.get(key) ?? r.frame?.scene.items.get(GROUP_PREFIX + key);
      if (anchor && after) {
        const [sx, sy] = r.toScreen(after.x + after.w / 2, after.y);
        r.cam = { ...r.cam, tx: r.cam.tx + anchor[0] - sx, ty: r.cam.ty + anchor[1] - sy };
      }
    });
  }

  private expandAll(): void {
    const m = this.current;
    if (!m) return;
    const all = new Set<string>();
    for (const g of m.groups.values()) if (g.key !== ROOT) all.add(g.address);
    this.firstPaint = true;
    this.setExpanded(all);
  }

  private collapseAll(): void {
    this.firstPaint = true;
    this.setExpanded(new Set());
  }

  /** Lays out what is visible now (in the worker, for the boxes not laid out before), then shows it. */
  private refresh(after?: () => void): void {
    const m = this.current;
    if (!m || !this.sizes) return;
    const vis = computeVisible(m, { expanded: this.expanded, showParams: this.showParams });
    const prefix = `${this.viewName}|${this.showParams ? 1 : 0}|`;
    this.layouts.run(
      { vis, model: m, sizes: this.sizes, prefix },
      (laid) => this.apply(m, vis, laid, after),
      () => this.current === m,
    );
  }

  private apply(m: GraphModel, vis: Visible, laid: Laid, after?: () => void): void {
    this.vis = vis;
    this.renderer.frame = { model: m, vis, ...laid };
    this.renderer.selected = this.selected ? (vis.rep.get(this.selected) ?? null) : null;
    this.layoutCount++;
    if (this.firstPaint) {
      this.renderer.fitReadable(laid.scene.bounds);
      this.firstPaint = false;
    }
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

  private fit(): void {
    const f = this.renderer.frame;
    if (f) this.renderer.fit(f.scene.bounds);
  }

  // ---- selection ----

  private select(id: string, opts: { center?: boolean; origin?: Origin }): void {
    const m = this.current;
    if (!m) return;
    const next = resolveSelection(id, m.nodes.has(id), opts.origin ?? "user");
    if (!next) return;
    id = next.id;
    this.selected = id;
    if (next.write) this.sync.writeSelected(id);
    this.inspector.show(m, id || null);
    const focus = (): void => {
      const f = this.renderer.frame;
      this.renderer.selected = id ? (f?.vis.rep.get(id) ?? null) : null;
      const r = id && this.renderer.selected ? f?.scene.items.get(this.renderer.selected) : undefined;
      if (opts.center && r) {
        this.firstPaint = false;
        this.renderer.centerOn(r);
      }
      this.renderer.request();
    };
    const need = id ? ancestorAddresses(m, id).filter((a) => !this.expanded.has(a)) : [];
    if (need.length) this.setExpanded(new Set([...this.expanded, ...need]), focus);
    else if (!this.vis || this.vis !== this.renderer.frame?.vis) this.refresh(focus);
    else focus();
  }

  private focusGroup(key: string): void {
    const m = this.current;
    if (!m) return;
    const need = groupAncestorAddresses(m, key).filter((a) => !this.expanded.has(a));
    const focus = (): void => {
      const f = this.renderer.frame;
      const r = f?.scene.boxes.get(key) ?? f?.scene.items.get(GROUP_PREFIX + key);
      if (r) {
        this.firstPaint = false;
        this.renderer.hover = GROUP_PREFIX + key;
        if (r.w * this.renderer.cam.scale > this.renderer.width * 0.9) this.renderer.fit(r);
        else this.renderer.centerOn(r);
      }
    };
    if (need.length) this.setExpanded(new Set([...this.expanded, ...need]), focus);
    else focus();
  }

  /** A click on the canvas: a header collapses its module, a collapsed module opens, a node is selected. */
  private click(hit: Hit): void {
    if (!hit) return;
    if (hit.type === "header") return this.toggleGroup(hit.box, false);
    if (hit.id.startsWith(GROUP_PREFIX)) return this.toggleGroup(hit.id.slice(GROUP_PREFIX.length), true);
    this.select(hit.id, {});
  }

  private jump(hit: SearchHit): void {
    if (hit.kind === "node") this.select(hit.id, { center: true });
    else this.focusGroup(hit.id);
  }

  // ---- status ----

  private updateStatus(): void {
    this.toolbar.showStatus(this.kernelStatus);
    this.pane.showBusy(this.layouts.busy > 0);
    this.root.dataset.layout = this.layouts.busy ? "running" : "idle";
  }

  dispose(): void {
    this.sync.dispose();
    this.pane.dispose();
    this.requests.dispose();
    this.layouts.dispose();
    this.inspector.dispose();
    this.root.remove();
  }
}
