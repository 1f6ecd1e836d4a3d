// The "device" overlay as pure functions: a categorical coloring of every op by the device it
// ran on (NodeInfo.device, already in the graph payload: nothing is asked of the kernel). Each
// device gets its own color from a fixed color-blind-safe palette (Okabe–Ito), cpu and meta
// always the same one; a collapsed module (or a rolled layer over its passes) whose ops ran on
// one device takes that device's color, one whose ops ran on several is "mixed": a neutral
// fill with a bar of each device's share of its ops.
import type { GraphPayload } from "../graph/protocol";
import type { GraphModel } from "../graph/tree";
import type { Visible } from "../graph/visibility";
import { unrolledIdsOf } from "./overlay";

export const CPU_COLOR = "rgb(86,180,233)"; // sky blue
export const META_COLOR = "rgb(204,121,167)"; // reddish purple
export const MIXED_COLOR = "rgb(206,212,218)"; // neutral grey, under the bar of shares
// The accelerators (cuda:0, cuda:1, mps, xla…), in order.
export const ACCELERATOR_PALETTE = [
  "rgb(230,159,0)", // orange
  "rgb(0,158,115)", // bluish green
  "rgb(0,114,178)", // blue
  "rgb(213,94,0)", // vermillion
  "rgb(240,228,66)", // yellow
  "rgb(0,0,0)", // black
];

/** One device's share of an item's ops (of the log's ops, in the legend). */
export interface DeviceShare {
  device: string;
  color: string;
  count: number;
}

/** An item's device coloring: one device (`mixed` false) or several. */
export interface ItemDevices {
  fill: string; // the device's color, or MIXED_COLOR
  mixed: boolean;
  shares: DeviceShare[]; // in legend order; one entry when not mixed
}

/** "cpu" first, the accelerators by type then index (cuda:2 before cuda:10), "meta" last. */
export function compareDevices(a: string, b: string): number {
  const key = (d: string): [number, string, number] => {
    const [type, index] = d.split(":");
    const rank = type === "cpu" ? 0 : type === "meta" ? 2 : 1;
    const i = Number(index);
    return [rank, type, index === undefined || Number.isNaN(i) ? -1 : i];
  };
  const [ra, ta, ia] = key(a);
  const [rb, tb, ib] = key(b);
  return ra - rb || (ta < tb ? -1 : ta > tb ? 1 : 0) || ia - ib || (a < b ? -1 : a > b ? 1 : 0);
}

/** Device -> its color: cpu and meta fixed, the others through the palette in device order;
 * past the palette, hues spread by the golden angle (distinct, not color-blind-checked). */
export function deviceColors(devices: Iterable<string>): Map<string, string> {
  const out = new Map<string, string>();
  let next = 0;
  for (const d of [...new Set(devices)].sort(compareDevices)) {
    const type = d.split(":")[0];
    if (type === "cpu") out.set(d, CPU_COLOR);
    else if (type === "meta") out.set(d, META_COLOR);
    else out.set(d, next < ACCELERATOR_PALETTE.length ? ACCELERATOR_PALETTE[next++] : extraColor(next++));
  }
  return out;
}

function extraColor(i: number): string {
  const hue = ((i - ACCELERATOR_PALETTE.length) * 137.508 + 40) % 360;
  return hslRgb(hue, 0.55, 0.45);
}

function hslRgb(h: number, s: number, l: number): string {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number): number => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return `rgb(${f(0)},${f(8)},${f(4)})`;
}

/** Unrolled op id -> the device it ran on, for the ops that have one. */
export function opDevices(payload: GraphPayload | null): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of payload?.unrolled.nodes ?? []) if (n.kind === "op" && n.device) out.set(n.id, n.device);
  return out;
}

/** Each device with its color and how many ops ran on it, in device order (the legend). */
export function deviceCounts(
  devices: ReadonlyMap<string, string>,
  colors = deviceColors(devices.values()),
): DeviceShare[] {
  const counts = new Map<string, number>();
  for (const d of devices.values()) counts.set(d, (counts.get(d) ?? 0) + 1);
  return [...counts.keys()]
    .sort(compareDevices)
    .map((device) => ({ device, color: colors.get(device)!, count: counts.get(device)! }));
}

/** The coloring of every visible op and module whose ops ran on a known device; items with
 * no device (sources, sinks, ops without an output, modules of those only) are left out. */
export function itemDevices(
  model: GraphModel,
  vis: Visible,
  devices: ReadonlyMap<string, string>,
  colors: ReadonlyMap<string, string>,
): Map<string, ItemDevices> {
  const out = new Map<string, ItemDevices>();
  for (const item of vis.items) {
    const counts = new Map<string, number>();
    for (const id of unrolledIdsOf(model, item.id)) {
      const d = devices.get(id);
      if (d) counts.set(d, (counts.get(d) ?? 0) + 1);
    }
    if (!counts.size) continue;
    const shares = [...counts.keys()]
      .sort(compareDevices)
      .map((device) => ({ device, color: colors.get(device) ?? MIXED_COLOR, count: counts.get(device)! }));
    const mixed = shares.length > 1;
    out.set(item.id, { fill: mixed ? MIXED_COLOR : shares[0].color, mixed, shares });
  }
  return out;
}

/** The bar of a mixed item, as segments [x, width, color] across `width` from `x`, each
 * device's width in proportion to its ops (every device at least 2 units wide). */
export function shareBar(shares: readonly DeviceShare[], x: number, width: number): [number, number, string][] {
  const total = shares.reduce((s, d) => s + d.count, 0);
  if (!total || width <= 0) return [];
  const min = Math.min(2, width / shares.length);
  const free = width - min * shares.length;
  const out: [number, number, string][] = [];
  let at = x;
  for (const s of shares) {
    const w = min + (free * s.count) / total;
    out.push([at, w, s.color]);
    at += w;
  }
  return out;
}
