// The metric overlay's state: the picked metric and scale, its per-op values fetched from the
// kernel ("metrics" request), which ops output NaN/Inf, and in a comparison which ops ran in A
// only and which side the inspector plots. The renderer asks it for each item's fill.
// "device" is picked like a metric but colors by category from the payload, asking nothing.

import type { Gradients } from "../graph/gradients";
import type { CompareSide, FirstNonfiniteResult, GraphPayload, MetricsResult } from "../graph/protocol";
import type { Visible } from "../graph/visibility";
import type { RequestClient } from "../kernel/messages";
import { decodeFloat32 } from "../kernel/messages";
import { pickScaleMode } from "../panel/colorScale";
import { fmtFixed } from "../panel/format";
import { type DeviceShare, deviceColors, deviceCounts, itemDevices, opDevices } from "../render/deviceOverlay";
import type { Frame, NodeOverlay } from "../render/frame";
import {
  DEVICE_OVERLAY,
  itemValues,
  type MetricInfo,
  makeScale,
  metricInfo,
  type OverlayName,
  rampColor,
  rampDomain,
  type ScaleMode,
  starvedItems,
  unrolledIdsOf,
  valueSlot,
} from "../render/overlay";
import { NO_VALUE_COLOR, ONLY_A_COLOR, ZERO_COLOR } from "../render/overlayLegend";
import { MetricPicker } from "./metricPicker";
import { graphValues, type RangeOf, rangeText } from "./overlayRange";

export interface OverlayDeps {
  requests: () => RequestClient;
  frame(): Frame | null; // what is drawn now (the colours are for its visible items)
  repaint(): void; // draw again, in the new colours
  selectUnrolled(id: string): void; // select an op by its unrolled id, in whatever view is shown
  sideChanged(): void; // the inspector must fetch the selected op again
  metricPicked?(): void; // the user picked a metric of the picker: a monitor coloring is off
}

/** Values colored in place of the picker's metric (the monitor view's statistic at a step). */
export interface ExternalValues {
  info: Pick<MetricInfo, "label" | "agg" | "zeroIsNone">;
  values: ReadonlyMap<string, number>; // unrolled op id -> value (NaN: none)
}

interface Painted {
  vis: Visible;
  colors: Map<string, string>;
  flagged: Set<string>;
  quiet: Set<string>; // flagged, but every NaN/Inf inside is masked away later
  gradFlagged: Set<string>;
  starved: Set<string>;
  shares: Map<string, readonly DeviceShare[]>; // device overlay: the mixed items' bars
}

export class OverlayControl implements NodeOverlay {
  readonly picker: MetricPicker;
  side: CompareSide = "a";
  private compare = false;
  private metric: OverlayName | null = null;
  private userMode: ScaleMode | null = null; // the log box as the user set it; null: from the data
  private rangeOf: RangeOf = "graph";
  // the whole graph's values of the metric shown, per view model (graphValues, costly once)
  private domain: { model: unknown; values: unknown; agg: string; list: number[] } | null = null;
  private values = new Map<string, number>(); // unrolled op id -> value of `metric`
  private devices = new Map<string, string>(); // unrolled op id -> the device it ran on
  private nonfinite = new Set<string>(); // unrolled ids of ops with a NaN/Inf output
  private masked = new Set<string>(); // ... whose NaN/Inf is masked away later (never reaches the output)
  private gradNonfinite = new Set<string>(); // ... with a NaN/Inf gradient
  private gradients: Gradients | null = null;
  private onlyA = new Set<string>();
  private saves = { notSaved: 0, ops: 0 }; // of the graph's (unrolled) ops
  private painted: Painted | null = null;
  private token = 0;
  private graphs = 0; // graphs shown so far: flags asked about an older one are dropped
  private external: ExternalValues | null = null;

  constructor(private deps: OverlayDeps) {
    this.picker = new MetricPicker({
      setMetric: (m) => {
        this.external = null;
        deps.metricPicked?.();
        this.setMetric(m);
      },
      setScale: (mode) => {
        this.userMode = mode;
        this.repaint();
      },
      setRange: (range) => {
        this.rangeOf = range;
        this.repaint();
      },
      firstNonfinite: () => this.firstNonfinite(),
      setSide: (side) => {
        this.side = side;
        deps.sideChanged();
      },
    });
  }

  get metricName(): OverlayName | null {
    return this.metric;
  }

  get inCompare(): boolean {
    return this.compare;
  }

  /** In a comparison, which value the inspector plots ("A", "B", "A − B"); else null. */
  get sideLabel(): string | null {
    return this.compare ? { a: "A", b: "B", diff: "A − B" }[this.side] : null;
  }

  /** Why unrolled op `id` has nothing to show on the side picked (it ran only in A), or null. */
  noSide(id: string): string | null {
    if (!this.compare || this.side === "a" || !this.onlyA.has(id)) return null;
    return `this op ran only in A: there is no ${this.side === "b" ? "B" : "A − B"} to show`;
  }

  /** A new graph: values of the old one no longer hold; a comparison opens on its difference. */
  setGraph(payload: GraphPayload | null, gradients: Gradients | null = null): void {
    this.compare = !!payload?.compare;
    this.gradients = gradients;
    this.graphs++;
    this.onlyA = new Set(payload?.compare?.onlyA ?? []);
    const ops = payload?.unrolled.nodes.filter((n) => n.kind === "op") ?? [];
    this.saves = { notSaved: ops.filter((n) => !n.saved).length, ops: ops.length };
    this.devices = opDevices(payload);
    const comm = !!payload?.unrolled.nodes.some((n) => n.collective); // "bytes communicated"
    this.picker.setOffers(this.compare, !!gradients, this.devices.size > 0, comm);
    if (!this.compare) this.side = "a";
    this.values = new Map();
    this.nonfinite = new Set();
    this.masked = new Set();
    this.gradNonfinite = new Set();
    if (!payload) return this.setMetric(null);
    this.fetchFlags("nonfinite", (ids) => (this.nonfinite = ids));
    this.fetchFlags("nonfiniteMasked", (ids) => (this.masked = ids));
    if (gradients) this.fetchFlags("gradNonfinite", (ids) => (this.gradNonfinite = ids));
    let metric = this.metric;
    if (metric === DEVICE_OVERLAY) {
      // the device coloring stays over a new graph (a rerun, an ablation) while it has devices
      if (!this.devices.size) metric = null;
    } else {
      if (metric && metricInfo(metric).grads && !gradients) metric = null;
      if (metric && metricInfo(metric).comm && !comm) metric = null;
      // back from a comparison (an ablation's "back to the trace"), a difference metric has no values
      if (metric && metricInfo(metric).compare && !this.compare) metric = null;
      if (this.compare && (!metric || !metricInfo(metric).compare)) metric = "relL2";
    }
    this.setMetric(metric);
  }

  /** Colors by `ext` (the picker's metric set aside), or back to the picker's when null. */
  showExternal(ext: ExternalValues | null): void {
    this.external = ext;
    if (ext && this.metric) {
      this.token++; // a metric still computing is not shown
      this.metric = null;
      this.picker.showMetric(null);
      this.picker.showNote("");
    }
    this.repaint();
  }

  setMetric(metric: OverlayName | null): void {
    if (metric !== this.metric) this.userMode = null; // a new metric: its scale from its data
    this.metric = metric;
    this.picker.showMetric(metric);
    this.picker.showNote("");
    this.values = new Map();
    const token = ++this.token;
    if (metric && metric !== DEVICE_OVERLAY) {
      this.picker.showNote("computing…");
      this.deps
        .requests()
        .request({ method: "metrics", params: { metric } }, { timeoutMs: 120000 })
        .then(({ result, buffers }) => {
          if (token !== this.token) return;
          this.values = toMap(result as MetricsResult, buffers[0]);
          this.picker.showNote("");
          this.repaint();
        })
        .catch((e: Error) => {
          if (token === this.token) this.picker.showNote(`metric unavailable: ${e.message}`);
        });
    }
    this.repaint();
  }

  /** The ops with a NaN/Inf output (or gradient), asked in the background: marks come when
   * the kernel has them (none if not saved). */
  private fetchFlags(
    metric: "nonfinite" | "nonfiniteMasked" | "gradNonfinite",
    keep: (ids: Set<string>) => void,
  ): void {
    const graph = this.graphs;
    this.deps
      .requests()
      .request({ method: "metrics", params: { metric } }, { timeoutMs: 120000 })
      .then(({ result, buffers }) => {
        if (graph !== this.graphs) return; // a reply about a graph no longer shown
        const values = toMap(result as MetricsResult, buffers[0]);
        keep(new Set([...values].filter(([, v]) => v > 0).map(([id]) => id)));
        this.painted = null; // the marks change, not only the colors
        this.repaint();
      })
      .catch(() => undefined);
  }

  private firstNonfinite(): void {
    this.picker.showNote("looking for the first NaN/Inf…");
    this.deps
      .requests()
      .request({ method: "firstNonfinite", params: {} }, { timeoutMs: 120000 })
      .then(({ result }) => {
        const id = (result as FirstNonfiniteResult).id;
        // say so when it never reaches the output (T5's log(0)): not the alarm it looks like
        const masked = id && this.masked.has(id) ? " (masked later, never reaches the output)" : "";
        this.picker.showNote(id ? `first NaN/Inf: ${id}${masked}` : this.noneFound());
        if (id) this.deps.selectUnrolled(id);
      })
      .catch((e: Error) => this.picker.showNote(`first NaN/Inf: ${e.message}`));
  }

  /** "No op made a NaN/Inf", as far as it was looked for: only saved ops have values. */
  private noneFound(): string {
    const { notSaved, ops } = this.saves;
    return notSaved
      ? `no saved op produced a NaN/Inf (${notSaved} of ${ops} ops not saved)`
      : "no op produced a NaN/Inf";
  }

  private repaint(): void {
    this.painted = null;
    this.deps.repaint();
  }

  // ---- NodeOverlay: asked by the renderer for every item it draws ----

  fill(itemId: string): string | null {
    return this.paint()?.colors.get(itemId) ?? null;
  }

  flagged(itemId: string): boolean {
    return this.paint()?.flagged.has(itemId) ?? false;
  }

  quietFlag(itemId: string): boolean {
    return this.paint()?.quiet.has(itemId) ?? false;
  }

  gradFlagged(itemId: string): boolean {
    return this.paint()?.gradFlagged.has(itemId) ?? false;
  }

  starved(itemId: string): boolean {
    return this.paint()?.starved.has(itemId) ?? false;
  }

  shares(itemId: string): readonly DeviceShare[] | null {
    return this.paint()?.shares.get(itemId) ?? null;
  }

  /** Colors and marks of the frame's visible items, computed once per layout and metric. */
  private paint(): Painted | null {
    const frame = this.deps.frame();
    if (!frame) return null;
    if (this.painted?.vis === frame.vis) return this.painted;
    const { model, vis } = frame;
    const marked = (ids: ReadonlySet<string>): Set<string> => {
      const out = new Set<string>();
      if (ids.size)
        for (const item of vis.items) if (unrolledIdsOf(model, item.id).some((id) => ids.has(id))) out.add(item.id);
      return out;
    };
    const flagged = marked(this.nonfinite);
    // an item whose every NaN/Inf is masked away later gets the quieter mark
    const loud = marked(new Set([...this.nonfinite].filter((id) => !this.masked.has(id))));
    const quiet = new Set([...flagged].filter((id) => !loud.has(id)));
    const gradFlagged = marked(this.gradNonfinite);
    const starved = this.gradients ? starvedItems(model, vis, this.gradients.starvedLeaves) : new Set<string>();
    const colors = new Map<string, string>();
    const shares = new Map<string, readonly DeviceShare[]>();
    const drawn = {
      nonfinite: loud.size > 0,
      maskedNonfinite: quiet.size > 0,
      gradNonfinite: gradFlagged.size > 0,
      starved: starved.size > 0,
    };
    if (this.metric === DEVICE_OVERLAY) {
      const palette = deviceColors(this.devices.values());
      let mixed = false;
      for (const [id, d] of itemDevices(model, vis, this.devices, palette)) {
        colors.set(id, d.fill);
        if (d.mixed) shares.set(id, d.shares);
        mixed ||= d.mixed;
      }
      this.picker.legend.showDevices(deviceCounts(this.devices, palette), mixed, this.saves.ops, drawn);
      this.painted = { vis, colors, flagged, quiet, gradFlagged, starved, shares };
      return this.painted;
    }
    const info = this.external?.info ?? (this.metric ? metricInfo(this.metric) : null);
    const values = this.external?.values ?? this.values;
    let scale = null;
    let scaleNote = "";
    let zeros = false;
    if (info && values.size) {
      const byItem = itemValues(model, vis, values, info.agg);
      const all = this.rangeOf === "graph" ? this.graphDomain(model, values, info.agg) : [...byItem.values()];
      const domain = rampDomain(info, all);
      const auto = pickScaleMode(domain);
      const mode = this.userMode ?? auto.mode;
      this.picker.showScale(mode, this.userMode === null);
      scale = makeScale(domain, mode);
      scaleNote = [
        this.userMode === null
          ? `auto: ${auto.decades > 0 ? `${fmtFixed(auto.decades, 1)} decades` : "one value"}`
          : "",
        rangeText(this.rangeOf, byItem.size),
      ]
        .filter(Boolean)
        .join(" · ");
      for (const [id, v] of byItem) {
        const slot = valueSlot(info, scale, v);
        zeros ||= slot === "zero";
        colors.set(id, slot === "none" ? NO_VALUE_COLOR : slot === "zero" ? ZERO_COLOR : rampColor(slot));
      }
      if (this.compare)
        for (const item of vis.items) {
          const ids = unrolledIdsOf(model, item.id);
          if (ids.length && ids.every((id) => this.onlyA.has(id))) colors.set(item.id, ONLY_A_COLOR);
        }
    }
    this.picker.legend.show(info, scale, this.compare, !!this.gradients, drawn, scaleNote, zeros);
    this.painted = { vis, colors, flagged, quiet, gradFlagged, starved, shares };
    return this.painted;
  }

  /** Every op's and module's value in `model` (graphValues), kept while neither changes. */
  private graphDomain(model: Frame["model"], values: ReadonlyMap<string, number>, agg: string): number[] {
    const d = this.domain;
    if (d && d.model === model && d.values === values && d.agg === agg) return d.list;
    const list = graphValues(model, values, agg as MetricInfo["agg"]);
    this.domain = { model, values, agg, list };
    return list;
  }
}

function toMap(result: MetricsResult, buffer: Parameters<typeof decodeFloat32>[0] | undefined): Map<string, number> {
  const values = buffer ? decodeFloat32(buffer) : new Float32Array(0);
  if (values.length !== result.ids.length)
    throw new Error(`metrics: ${values.length} values for ${result.ids.length} ids`);
  return new Map(result.ids.map((id, i) => [id, values[i]]));
}
