// Metric overlays as pure functions: which metrics there are and how each aggregates over
// passes (rolled view) and over the ops inside a collapsed module, the color scale
// (linear or log) and the color of a value.
import type { MetricName } from "../graph/protocol";
import type { GraphModel } from "../graph/tree";
import { GROUP_PREFIX, type Visible } from "../graph/visibility";

export type Aggregate = "sum" | "max" | "min" | "mean" | "share";
/** What the picker colors by: a metric the kernel computes ("metrics" request), or "device",
 * computed here from NodeInfo.device (render/deviceOverlay.ts), never sent to the kernel. */
export type OverlayName = MetricName | "device";
export const DEVICE_OVERLAY = "device";
export type ScaleMode = "linear" | "log";

export interface MetricInfo {
  name: MetricName;
  label: string;
  agg: Aggregate; // over passes and over the ops inside a collapsed module
  compare: boolean; // only in a comparison
  grads?: boolean; // only for a log with gradients
  comm?: boolean; // only for a log with collectives (NodeInfo.collective)
  /** An amount (params, FLOPs, bytes): 0 means none, drawn in its own color and left out
   * of the ramp's range, not the color of the smallest amount. */
  zeroIsNone?: boolean;
}

export const METRICS: MetricInfo[] = [
  { name: "flops", label: "FLOPs", agg: "sum", compare: false, zeroIsNone: true },
  { name: "time", label: "time (ms)", agg: "sum", compare: false },
  { name: "bytes", label: "bytes", agg: "sum", compare: false, zeroIsNone: true },
  { name: "params", label: "params", agg: "sum", compare: false, zeroIsNone: true },
  { name: "mean", label: "mean", agg: "mean", compare: false },
  { name: "std", label: "std", agg: "mean", compare: false },
  { name: "absmax", label: "absmax", agg: "max", compare: false },
  { name: "zeroFraction", label: "zero fraction", agg: "mean", compare: false },
  { name: "nonfinite", label: "non-finite", agg: "share", compare: false },
  { name: "nonfiniteMasked", label: "non-finite, masked later", agg: "share", compare: false },
  { name: "relL2", label: "difference (rel. L2)", agg: "max", compare: true },
  { name: "maxAbs", label: "difference (max abs)", agg: "max", compare: true },
  { name: "cosine", label: "cosine (A, B)", agg: "min", compare: true },
  { name: "gradNorm", label: "gradient norm", agg: "max", compare: false, grads: true },
  { name: "gradNonfinite", label: "non-finite gradient", agg: "share", compare: false, grads: true },
  { name: "commBytes", label: "bytes communicated", agg: "sum", compare: false, comm: true, zeroIsNone: true },
];

/** The metrics the picker offers for a log (difference metrics in a comparison, gradient
 * metrics for a log with gradients, bytes communicated for a log with collectives). */
export function offeredMetrics(compare: boolean, grads: boolean, comm = false): MetricInfo[] {
  return METRICS.filter((m) => (compare || !m.compare) && (grads || !m.grads) && (comm || !m.comm));
}

export function metricInfo(name: MetricName): MetricInfo {
  return METRICS.find((m) => m.name === name)!;
}

/** The aggregate of the values that are known (NaN: no value); NaN when none is. */
export function aggregate(agg: Aggregate, values: Iterable<number>): number {
  let n = 0;
  let acc = agg === "max" ? -Infinity : agg === "min" ? Infinity : 0;
  for (const v of values) {
    if (Number.isNaN(v)) continue;
    n++;
    if (agg === "max") acc = Math.max(acc, v);
    else if (agg === "min") acc = Math.min(acc, v);
    else if (agg === "share") acc += v > 0 ? 1 : 0;
    else acc += v;
  }
  if (n === 0) return NaN;
  return agg === "mean" || agg === "share" ? acc / n : acc;
}

/** Unrolled node ids of an item: a node's passes (rolled) or itself, every op inside a module. */
export function unrolledIdsOf(model: GraphModel, itemId: string): string[] {
  const out: string[] = [];
  const addNode = (id: string): void => {
    const n = model.nodes.get(id);
    if (n?.kind !== "op") return;
    if (model.viewName === "rolled") out.push(...n.passes);
    else out.push(id);
  };
  if (!itemId.startsWith(GROUP_PREFIX)) {
    addNode(itemId);
    return out;
  }
  const stack = [itemId.slice(GROUP_PREFIX.length)];
  while (stack.length) {
    const g = model.groups.get(stack.pop()!);
    if (!g) continue;
    g.childNodes.forEach(addNode);
    stack.push(...g.childGroups);
  }
  return out;
}

/** Items that stand for a leaf that wanted a gradient and got none (`starved`: unrolled ids
 * of param/input sources): the source itself, an op using such a parameter, a collapsed
 * module holding one. */
export function starvedItems(model: GraphModel, vis: Visible, starved: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  if (!starved.size) return out;
  const hit = (id: string): boolean => {
    const n = model.nodes.get(id);
    if (!n) return false;
    if (n.kind === "op") return n.params.some(([name]) => starved.has(name));
    return (model.viewName === "rolled" ? n.passes : [n.id]).some((p) => starved.has(p));
  };
  for (const item of vis.items) {
    if (!item.id.startsWith(GROUP_PREFIX)) {
      if (hit(item.id)) out.add(item.id);
      continue;
    }
    const stack = [item.id.slice(GROUP_PREFIX.length)];
    while (stack.length) {
      const g = model.groups.get(stack.pop()!);
      if (!g) continue;
      if (g.childNodes.some(hit)) {
        out.add(item.id);
        break;
      }
      stack.push(...g.childGroups);
    }
  }
  return out;
}

/** Item id -> its aggregated value, for every visible item that is an op or a module. */
export function itemValues(
  model: GraphModel,
  vis: Visible,
  values: ReadonlyMap<string, number>,
  agg: Aggregate,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of vis.items) {
    const ids = unrolledIdsOf(model, item.id);
    if (ids.length === 0) continue;
    out.set(
      item.id,
      aggregate(
        agg,
        ids.map((id) => values.get(id) ?? NaN),
      ),
    );
  }
  return out;
}

/** The values the ramp spans: an amount's zeros (no params, no FLOPs) have their own color. */
export function rampDomain(info: Pick<MetricInfo, "zeroIsNone">, values: readonly number[]): number[] {
  return info.zeroIsNone ? values.filter((v) => v !== 0) : [...values];
}

/** What a value is drawn as: "none" (no value: NaN), "zero" (an amount of none), or its
 * place 0..1 along the ramp. */
export function valueSlot(info: Pick<MetricInfo, "zeroIsNone">, scale: Scale, v: number): "none" | "zero" | number {
  if (info.zeroIsNone && v === 0) return "zero";
  return scale.position(v) ?? "none";
}

export interface Scale {
  mode: ScaleMode;
  min: number; // of the shown values (log: of their magnitudes above 0)
  max: number;
  /** 0..1 along the color ramp; null for no value. */
  position(v: number): number | null;
}

export function makeScale(values: Iterable<number>, mode: ScaleMode): Scale {
  let min = Infinity;
  let max = -Infinity;
  for (const raw of values) {
    if (!Number.isFinite(raw)) continue;
    const v = mode === "log" ? Math.abs(raw) : raw;
    if (mode === "log" && v <= 0) continue;
    min = Math.min(min, v);
    max = Math.max(max, v);
  }
  if (min > max) [min, max] = [0, 0];
  const lo = mode === "log" && min > 0 ? Math.log10(min) : min;
  const hi = mode === "log" && max > 0 ? Math.log10(max) : max;
  const position = (raw: number): number | null => {
    if (Number.isNaN(raw)) return null;
    if (!Number.isFinite(raw)) return raw > 0 || mode === "log" ? 1 : 0;
    let v = raw;
    if (mode === "log") {
      v = Math.abs(raw);
      if (v <= 0) return 0; // zero sits at the bottom of a log scale
      v = Math.log10(v);
    }
    // one value: in the middle, but all zeros (no difference, no FLOPs) is "none", at the bottom
    if (hi === lo) return lo === 0 ? 0 : 0.5;
    return Math.min(1, Math.max(0, (v - lo) / (hi - lo)));
  };
  return { mode, min, max, position };
}

// Viridis at five stops: perceptually even and readable for color-blind users.
const RAMP: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

export function rampColor(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const f = x - i;
  const c = RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** The CSS gradient of the ramp, for the legend. */
export function rampGradient(): string {
  return `linear-gradient(to right, ${RAMP.map((_, i) => rampColor(i / (RAMP.length - 1))).join(", ")})`;
}

/** Text color readable on an "rgb(r,g,b)" fill: white on dark, near-black on light. */
export function textOn(fill: string): string {
  const m = /^rgb\((\d+),(\d+),(\d+)\)$/.exec(fill);
  if (!m) return "#1f2933";
  const [r, g, b] = [m[1], m[2], m[3]].map(Number);
  return 0.299 * r + 0.587 * g + 0.114 * b < 140 ? "#ffffff" : "#1f2933";
}
