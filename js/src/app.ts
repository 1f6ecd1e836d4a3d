// The widget controller: owns the state (view, expansion, selection), keeps it in sync
// with the kernel's traits, and wires toolbar, canvas, layout worker and inspector.
import type { AnyModel } from "./kernel/anywidget";
import { defaultExpansion } from "./model/defaultExpansion";
import { edgeGeometry } from "./layout/edges";
import { Inspector, h } from "./panel/inspector";
import { DEFAULT_METRICS, FONT_FAMILY, FONT_PX, type Metrics } from "./layout/labels";
import { LayoutClient } from "./layout/layoutClient";
import type { GroupLayout } from "./layout/layoutCore";
import { composeScene, planLayout, type Rect, SizeCache } from "./layout/layoutPlan";
import { decodeActivation, RequestClient } from "./kernel/messages";
import { preloadPlots } from "./panel/plots";
import type { ActivationResult, GraphPayload, NodeInfo, ViewName } from "./model/protocol";
import { Renderer } from "./render/renderer";
import { search, type SearchHit } from "./model/search";
import { injectStyles } from "./render/styles";
import { pickTheme, type Theme } from "./render/theme";
import { ancestorAddresses, buildModel, type GraphModel, groupAncestorAddresses, ROOT } from "./model/tree";
import { GROUP_PREFIX, computeVisible, type Visible } from "./model/visibility";

const GRAPH_HEIGHT = 620;

export interface LensDebug {
  readonly visibleCount: number;
  readonly visibleIds: string[];
  readonly layoutStatus: "idle" | "running";
  readonly layoutCount: number; // layouts applied so far
  readonly view: ViewName;
  readonly expanded: string[];
  readonly selected: string;
  readonly drawnItems: number;
  readonly lastFrameMs: number;
  readonly usesWorker: boolean;
  readonly scale: number;
  nodeScreenPos(id: string): { x: number; y: number } | null;
  groupHeaderPos(key: string): { x: number; y: number } | null;
}

export class LensApp {
  readonly root: HTMLElement;
  private theme: Theme;
  private metrics: Metrics = DEFAULT_METRICS;
  private payload: GraphPayload | null = null;
  private models: Partial<Record<ViewName, GraphModel>> = {};
  private viewName: ViewName = "unrolled";
  private expanded = new Set<string>();
  private showParams = false;
  private selected = "";
  private vis: Visible | null = null;
  private sizes: SizeCache | null = null;
  private cache = new Map<string, GroupLayout>();
  private seq = 0;
  private running = 0;
  private layoutCount = 0;
  private firstPaint = true; // fit the camera on the next layout
  private painted = false;
  private layoutClient = new LayoutClient();
  private requests: RequestClient;
  private renderer: Renderer;
  private inspector: Inspector;
  private ro: ResizeObserver;
  private cleanups: (() => void)[] = [];

  // DOM
  private banner = h("div", "lens-banner");
  private titleEl = h("div", "lens-title");
  private statusEl = h("span", "lens-status");
  private busyEl = h("div", "lens-busy");
  private overlay = h("div", "lens-overlay");
  private searchInput = document.createElement("input");
  private results = h("div", "lens-results");
  private hits: SearchHit[] = [];
  private hitIndex = 0;
  private viewBtns: Record<ViewName, HTMLButtonElement>;
  private kernelStatus = "";

  constructor(
    private model: AnyModel,
    el: HTMLElement,
  ) {
    injectStyles(el.ownerDocument);
    this.theme = pickTheme(el);
    this.root = h("div", "lens-root");
    this.root.dataset.testid = "lens-root";
    el.appendChild(this.root);

    const toolbar = h("div", "lens-toolbar");
    toolbar.dataset.testid = "toolbar";
    const btn = (label: string, testid: string, title: string, fn: () => void): HTMLButtonElement => {
      const b = h("button", "lens-btn", label);
      b.dataset.testid = testid;
      b.title = title;
      b.onclick = fn;
      return b;
    };
    const seg = h("div", "lens-seg");
    this.viewBtns = {
      unrolled: btn("Unrolled", "view-unrolled", "Every call of a repeated layer on its own", () => this.setView("unrolled", true)),
      rolled: btn("Rolled", "view-rolled", "Repeated calls of a layer folded into one node (×N)", () => this.setView("rolled", true)),
    };
    seg.append(this.viewBtns.unrolled, this.viewBtns.rolled);
    const check = (label: string, testid: string, on: boolean, fn: (v: boolean) => void): HTMLLabelElement => {
      const l = h("label", "lens-check");
      const c = document.createElement("input");
      c.type = "checkbox";
      c.checked = on;
      c.dataset.testid = testid;
      c.onchange = () => fn(c.checked);
      l.append(c, label);
      return l;
    };
    const searchBox = h("div", "lens-search");
    this.searchInput.placeholder = "Search ops or modules…";
    this.searchInput.dataset.testid = "search";
    this.results.dataset.testid = "search-results";
    this.results.hidden = true;
    searchBox.append(this.searchInput, this.results);
    this.statusEl.dataset.testid = "status";
    toolbar.append(
      this.titleEl,
      btn("Fit", "fit", "Fit the graph in view", () => this.fit()),
      btn("Expand all", "expand-all", "Expand every module", () => this.expandAll()),
      btn("Collapse all", "collapse-all", "Collapse every module", () => this.collapseAll()),
      h("span", "lens-sep"),
      seg,
      h("span", "lens-sep"),
      check("shapes on edges", "toggle-shapes", false, (v) => {
        this.renderer.showShapes = v;
        this.renderer.request();
      }),
      check("parameters", "toggle-params", false, (v) => {
        this.showParams = v;
        this.refresh();
      }),
      h("span", "lens-sep"),
      searchBox,
      h("span", "lens-spacer"),
      this.statusEl,
    );
    this.banner.dataset.testid = "error-banner";
    this.banner.hidden = true;

    const main = h("div", "lens-main");
    main.style.height = `${GRAPH_HEIGHT}px`;
    const wrap = h("div", "lens-canvas-wrap");
    const canvas = document.createElement("canvas");
    canvas.dataset.testid = "graph-canvas";
    canvas.tabIndex = 0;
    wrap.append(canvas, this.busyEl);
    // Node count and legend get their own strip below the canvas so they never cover nodes.
    const footer = h("div", "lens-footer");
    footer.dataset.testid = "graph-footer";
    footer.append(this.overlay, this.legend());
    const graphCol = h("div", "lens-graph-col");
    graphCol.append(wrap, footer);
    this.busyEl.hidden = true;
    this.busyEl.dataset.testid = "layout-busy";
    this.renderer = new Renderer(canvas, this.theme);
    this.renderer.onDrawn = () => this.updateOverlay();
    this.inspector = new Inspector({
      theme: () => this.theme,
      select: (id) => this.select(id, { center: true }),
      close: () => this.select("", {}),
      fetchActivation: (p, onSlow) =>
        this.requests
          .request({ method: "activation", params: p }, { timeoutMs: 20000, slowMs: 1000, onSlow })
          .then(({ result, buffers }) => decodeActivation(result as ActivationResult, buffers)),
      rerun: (id) => this.requests.request({ method: "rerun", params: { id } }, { timeoutMs: 120000 }).then(() => undefined),
      unrolledNode: (id) => this.getModel("unrolled")?.nodes.get(id),
    });
    main.append(graphCol, this.inspector.el);
    this.root.append(toolbar, this.banner, main);
    this.metrics = measureMetrics(canvas) ?? DEFAULT_METRICS;

    this.requests = new RequestClient(model);
    this.bindCanvas(canvas);
    this.bindSearch();
    this.ro = new ResizeObserver(() => {
      this.renderer.resize(wrap.clientWidth, wrap.clientHeight);
    });
    this.ro.observe(wrap);

    const on = (ev: string, fn: () => void): void => {
      model.on(ev, fn);
      this.cleanups.push(() => model.off(ev, fn));
    };
    on("change:graph", () => this.setGraph(model.get("graph")));
    on("change:selected", () => {
      // a view change may come in the same update: switch first, it picks the selection up
      if (model.get("view") !== this.viewName) return this.setView(model.get("view") as ViewName, false);
      const v = (model.get("selected") as string) ?? "";
      if (v !== this.selected) this.select(v, { center: true, fromKernel: true });
    });
    on("change:view", () => this.setView(model.get("view") as ViewName, false));
    on("change:expanded", () => {
      const next = new Set((model.get("expanded") as string[]) ?? []);
      if (!sameSet(next, this.expanded)) {
        this.expanded = next;
        this.refresh();
      }
    });
    on("change:status", () => {
      this.kernelStatus = (model.get("status") as string) ?? "";
      this.updateStatus();
    });

    this.viewName = (model.get("view") as ViewName) === "rolled" ? "rolled" : "unrolled";
    this.expanded = new Set((model.get("expanded") as string[]) ?? []);
    this.selected = (model.get("selected") as string) ?? "";
    this.kernelStatus = (model.get("status") as string) ?? "";
    this.updateViewButtons();
    this.renderer.resize(wrap.clientWidth || 800, wrap.clientHeight || GRAPH_HEIGHT);
    this.setGraph(model.get("graph") as GraphPayload | null, true);
    this.exposeDebug(el);
  }

  // ---- graph and view ----

  private getModel(view: ViewName): GraphModel | null {
    if (!this.payload) return null;
    let m = this.models[view];
    if (!m) {
      m = buildModel(this.payload, view);
      this.models[view] = m;
    }
    return m;
  }

  private get current(): GraphModel | null {
    return this.getModel(this.viewName);
  }

  private setGraph(payload: GraphPayload | null, initial = false): void {
    this.payload = payload && payload.unrolled ? payload : null;
    this.models = {};
    this.cache.clear();
    this.vis = null;
    this.renderer.frame = null;
    const m = this.current;
    if (!m || !this.payload) {
      this.titleEl.textContent = "no graph";
      this.renderer.request();
      return;
    }
    this.sizes = new SizeCache(m, this.metrics);
    this.titleEl.replaceChildren(this.payload.modelClass, h("small", "", `${this.payload.nOps.toLocaleString("en-US")} ops`));
    const p = this.payload;
    this.banner.hidden = !p.error;
    if (p.error) {
      this.banner.replaceChildren(h("b", "", "Forward pass raised: "), p.error, " — showing the partial trace.");
      if (p.failedOp) {
        const link = h("button", "lens-link", p.failedOp);
        link.onclick = () => this.select(this.mapId(p.failedOp!, "unrolled", this.viewName), { center: true });
        this.banner.append(" Failed op: ", link);
      }
    }
    if (initial && this.expanded.size === 0) {
      this.expanded = new Set(defaultExpansion(m, this.showParams));
      this.syncExpanded();
    }
    this.firstPaint = true;
    const sel = this.selected && m.nodes.has(this.selected) ? this.selected : "";
    this.selected = "";
    if (sel) this.select(sel, { center: true, fromKernel: true });
    else {
      this.inspector.show(m, null);
      this.refresh();
    }
  }

  /** The node of `view` that stands for `id` of `from` (a layer for a pass, the first pass for a layer). */
  private mapId(id: string, from: ViewName, to: ViewName): string {
    if (!id || from === to) return id;
    const target = this.getModel(to);
    if (!target) return "";
    if (to === "rolled") {
      for (const n of target.view.nodes) if (n.passes.includes(id)) return n.id;
      return "";
    }
    const src = this.getModel(from)?.nodes.get(id);
    return src?.passes[0] ?? "";
  }

  private setView(view: ViewName, fromUser: boolean): void {
    if (view !== "rolled" && view !== "unrolled") return;
    if (view === this.viewName) return;
    let sel = this.mapId(this.selected, this.viewName, view);
    const fromKernel = fromUser ? "" : ((this.model.get("selected") as string) ?? "");
    if (fromKernel && this.getModel(view)?.nodes.has(fromKernel)) sel = fromKernel;
    this.viewName = view;
    this.updateViewButtons();
    if (fromUser) {
      this.model.set("view", view);
      this.model.save_changes();
    }
    const m = this.current;
    if (!m) return;
    this.sizes = new SizeCache(m, this.metrics);
    this.firstPaint = true;
    this.selected = "";
    this.vis = null; // the other view's visible set: select() must lay out the new view
    if (sel) this.select(sel, { center: true });
    else {
      this.inspector.show(m, null);
      if (fromUser) {
        this.model.set("selected", "");
        this.model.save_changes();
      }
      this.refresh();
    }
  }

  private updateViewButtons(): void {
    for (const v of ["unrolled", "rolled"] as ViewName[]) this.viewBtns[v].setAttribute("aria-pressed", String(v === this.viewName));
  }

  // ---- expansion and layout ----

  private syncExpanded(): void {
    this.model.set("expanded", [...this.expanded].sort());
    this.model.save_changes();
  }

  private setExpanded(next: Set<string>, after?: () => void): void {
    this.expanded = next;
    this.syncExpanded();
    this.refresh(after);
  }

  private toggleGroup(key: string, expand: boolean): void {
    const m = this.current;
    const g = m?.groups.get(key);
    if (!m || !g) return;
    // keep the clicked module where it was on screen
    const before = this.renderer.frame?.scene.items.get(GROUP_PREFIX + key) ?? this.renderer.frame?.scene.boxes.get(key);
    const anchor = before ? this.renderer.toScreen(before.x + before.w / 2, before.y) : null;
    const next = new Set(this.expanded);
    if (expand) next.add(g.address);
    else next.delete(g.address);
    this.setExpanded(next, () => {
      const f = this.renderer.frame;
      const after = f?.scene.boxes.get(key) ?? f?.scene.items.get(GROUP_PREFIX + key);
      if (anchor && after) {
        const [sx, sy] = this.renderer.toScreen(after.x + after.w / 2, after.y);
        this.renderer.cam = { ...this.renderer.cam, tx: this.renderer.cam.tx + anchor[0] - sx, ty: this.renderer.cam.ty + anchor[1] - sy };
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

  private refresh(after?: () => void): void {
    const m = this.current;
    if (!m || !this.sizes) return;
    const vis = computeVisible(m, { expanded: this.expanded, showParams: this.showParams });
    const prefix = `${this.viewName}|${this.showParams ? 1 : 0}|`;
    const plan = planLayout(vis, this.sizes, this.cache, prefix);
    const seq = ++this.seq;
    if (plan.jobs.length === 0) {
      this.apply(vis, plan.keys, after);
      return;
    }
    this.running++;
    this.updateStatus();
    performance.mark("lens:layout-start");
    const t0 = performance.now();
    this.layoutClient
      .run(plan.jobs)
      .then((results) => {
        for (const r of results) this.cache.set(r.key, r);
        if (seq === this.seq && this.current === m) {
          this.apply(vis, plan.keys, after);
          performance.mark("lens:layout-done", { detail: { ms: performance.now() - t0, boxes: plan.jobs.length } });
        }
      })
      .catch((e: Error) => {
        this.banner.hidden = false;
        this.banner.replaceChildren(h("b", "", "Layout failed: "), e.message);
      })
      .finally(() => {
        this.running--;
        this.updateStatus();
      });
  }

  private apply(vis: Visible, keys: Map<string, string>, after?: () => void): void {
    const m = this.current!;
    this.vis = vis;
    const scene = composeScene(vis, m, this.sizes!, keys, this.cache);
    const edges = edgeGeometry(vis.edges, scene, (box) => this.cache.get(keys.get(box) ?? ""));
    this.renderer.frame = { model: m, vis, scene, edges };
    this.renderer.selected = this.selected ? (vis.rep.get(this.selected) ?? null) : null;
    this.layoutCount++;
    if (this.firstPaint) {
      this.renderer.fitReadable(scene.bounds);
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

  select(id: string, opts: { center?: boolean; fromKernel?: boolean }): void {
    const m = this.current;
    if (!m) return;
    if (id && !m.nodes.has(id)) {
      if (opts.fromKernel) return; // not (yet) in this view: never echo a cleared selection back
      id = "";
    }
    this.selected = id;
    if (!opts.fromKernel) {
      this.model.set("selected", id);
      this.model.save_changes();
    }
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

  // ---- canvas interaction ----

  private bindCanvas(canvas: HTMLCanvasElement): void {
    let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
    let dragged = false;
    const local = (ev: MouseEvent): [number, number] => {
      const r = canvas.getBoundingClientRect();
      return [ev.clientX - r.left, ev.clientY - r.top];
    };
    canvas.addEventListener("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      const [x, y] = local(ev);
      down = { x, y, tx: this.renderer.cam.tx, ty: this.renderer.cam.ty, id: ev.pointerId };
      dragged = false;
      canvas.setPointerCapture(ev.pointerId);
    });
    canvas.addEventListener("pointermove", (ev) => {
      const [x, y] = local(ev);
      if (down) {
        if (!dragged && Math.hypot(x - down.x, y - down.y) > 3) {
          dragged = true;
          canvas.classList.add("lens-dragging");
        }
        if (dragged) {
          this.renderer.cam = { ...this.renderer.cam, tx: down.tx + x - down.x, ty: down.ty + y - down.y };
          this.renderer.request();
        }
        return;
      }
      const hit = this.renderer.hitTest(x, y);
      const hid = hit?.type === "item" ? hit.id : hit?.type === "header" ? GROUP_PREFIX + hit.box : null;
      canvas.classList.toggle("lens-pointer", hit !== null);
      if (hid !== this.renderer.hover) {
        this.renderer.hover = hid;
        canvas.title = hit?.type === "item" ? hit.id.replace(/^@/, "") : hit?.type === "header" ? `${hit.box} (click to collapse)` : "";
        this.renderer.request();
      }
    });
    const end = (ev: PointerEvent): void => {
      if (!down || ev.pointerId !== down.id) return;
      canvas.classList.remove("lens-dragging");
      const wasDrag = dragged;
      down = null;
      if (wasDrag) return;
      const [x, y] = local(ev);
      this.click(this.renderer.hitTest(x, y));
    };
    canvas.addEventListener("pointerup", end);
    canvas.addEventListener("pointercancel", () => {
      down = null;
      canvas.classList.remove("lens-dragging");
    });
    canvas.addEventListener("pointerleave", () => {
      if (this.renderer.hover) {
        this.renderer.hover = null;
        this.renderer.request();
      }
    });
    canvas.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        const [x, y] = local(ev);
        const dy = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
        this.renderer.zoomAt(x, y, Math.exp(-dy * 0.0015));
      },
      { passive: false },
    );
  }

  private click(hit: ReturnType<Renderer["hitTest"]>): void {
    if (!hit) return;
    if (hit.type === "header") return this.toggleGroup(hit.box, false);
    if (hit.id.startsWith(GROUP_PREFIX)) return this.toggleGroup(hit.id.slice(GROUP_PREFIX.length), true);
    this.select(hit.id, {});
  }

  // ---- search ----

  private bindSearch(): void {
    const input = this.searchInput;
    const show = (): void => {
      const m = this.current;
      this.hits = m ? search(m, input.value, 30, this.showParams) : [];
      this.hitIndex = 0;
      this.renderResults();
    };
    input.addEventListener("input", show);
    input.addEventListener("focus", show);
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        if (this.hits.length) {
          this.hitIndex = (this.hitIndex + (ev.key === "ArrowDown" ? 1 : this.hits.length - 1)) % this.hits.length;
          this.renderResults();
        }
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        const hit = this.hits[this.hitIndex];
        if (hit) this.jump(hit);
      } else if (ev.key === "Escape") {
        this.results.hidden = true;
        input.blur();
      }
      ev.stopPropagation(); // keep JupyterLab's shortcuts out of the search box
    });
    input.addEventListener("blur", () => setTimeout(() => (this.results.hidden = true), 150));
  }

  private renderResults(): void {
    this.results.replaceChildren();
    if (!this.searchInput.value.trim()) {
      this.results.hidden = true;
      return;
    }
    this.results.hidden = false;
    if (this.hits.length === 0) {
      this.results.append(h("div", "lens-result lens-muted", "no match"));
      return;
    }
    this.hits.forEach((hit, i) => {
      const row = h("div", "lens-result");
      row.dataset.testid = "search-result";
      row.setAttribute("aria-selected", String(i === this.hitIndex));
      row.append(h("span", "lens-mono", (hit.kind === "group" ? "▣ " : "") + hit.label), h("span", "lens-muted", hit.detail));
      row.onmousedown = (ev) => {
        ev.preventDefault();
        this.jump(hit);
      };
      this.results.append(row);
    });
  }

  private jump(hit: SearchHit): void {
    this.results.hidden = true;
    if (hit.kind === "node") this.select(hit.id, { center: true });
    else this.focusGroup(hit.id);
  }

  // ---- status and debug ----

  private updateStatus(): void {
    const parts: string[] = [];
    if (this.kernelStatus) parts.push(this.kernelStatus);
    this.statusEl.textContent = parts.join(" · ");
    this.busyEl.hidden = this.running === 0;
    this.busyEl.textContent = "laying out…";
    this.root.dataset.layout = this.running ? "running" : "idle";
  }

  private updateOverlay(): void {
    const f = this.renderer.frame;
    if (!f) {
      this.overlay.textContent = "";
      return;
    }
    this.overlay.textContent = `${f.vis.items.length.toLocaleString("en-US")} nodes shown · zoom ${Math.round(this.renderer.cam.scale * 100)}%`;
  }

  private legend(): HTMLElement {
    const t = this.theme;
    const l = h("div", "lens-legend");
    l.dataset.testid = "legend";
    const item = (fill: string, stroke: string, text: string): HTMLElement => {
      const s = h("span", "");
      const sw = h("i", "");
      sw.style.background = fill;
      sw.style.borderColor = stroke;
      s.append(sw, text);
      return s;
    };
    l.append(
      item(t.input, t.inputStroke, "input"),
      item(t.output, t.outputStroke, "output"),
      item(t.hasParams, t.hasParamsStroke, "uses params"),
      item(t.internal, t.paramStroke, "not from input"),
      item(t.collapsed, t.collapsedStroke, "module (click to open)"),
      item(t.failed, t.failedStroke, "failed"),
    );
    return l;
  }

  private exposeDebug(el: HTMLElement): void {
    const app = this;
    const screen = (r: Rect | undefined, header = false): { x: number; y: number } | null => {
      if (!r) return null;
      const c = app.renderer.canvas.getBoundingClientRect();
      const [sx, sy] = app.renderer.toScreen(r.x + r.w / 2, header ? r.y + 10 : r.y + r.h / 2);
      return { x: c.left + sx, y: c.top + sy };
    };
    const dbg: LensDebug = {
      get visibleCount() {
        return app.renderer.frame?.vis.items.length ?? 0;
      },
      get visibleIds() {
        return app.renderer.frame ? app.renderer.frame.vis.items.map((i) => i.id) : [];
      },
      get layoutStatus() {
        return app.running > 0 || !app.renderer.frame ? "running" : "idle";
      },
      get layoutCount() {
        return app.layoutCount;
      },
      get view() {
        return app.viewName;
      },
      get expanded() {
        return [...app.expanded].sort();
      },
      get selected() {
        return app.selected;
      },
      get drawnItems() {
        return app.renderer.drawnItems;
      },
      get lastFrameMs() {
        return app.renderer.lastFrameMs;
      },
      get usesWorker() {
        return app.layoutClient.usesWorker;
      },
      get scale() {
        return app.renderer.cam.scale;
      },
      nodeScreenPos: (id) => screen(app.renderer.frame?.scene.items.get(id)),
      groupHeaderPos: (key) => screen(app.renderer.frame?.scene.boxes.get(key), true),
    };
    (el as unknown as { __lens: LensDebug }).__lens = dbg;
    (this.root as unknown as { __lens: LensDebug }).__lens = dbg;
  }

  dispose(): void {
    this.cleanups.forEach((f) => f());
    this.ro.disconnect();
    this.renderer.dispose();
    this.requests.dispose();
    this.layoutClient.dispose();
    this.inspector.dispose();
    this.root.remove();
  }
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

function measureMetrics(canvas: HTMLCanvasElement): Metrics | null {
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.font = `700 ${FONT_PX}px ${FONT_FAMILY}`;
  const w = ctx.measureText("M".repeat(40)).width / 40;
  return w > 2 ? { charWidth: w } : null;
}

export type { NodeInfo };
