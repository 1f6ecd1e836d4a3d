// Colour scales that read right: signed data gets a diverging scale centred exactly at 0
// (symmetric range, so 0 is the middle colour whatever the min and max), non-negative data
// a sequential one from 0.
import type { Theme } from "../render/theme";

export interface ColorRange {
  colorscale: string | [number, string][];
  zmin: number;
  zmax: number;
  diverging: boolean;
}

// ColorBrewer RdBu (reversed: negative blue, positive red); the middle is the panel's own
// background tone so that zeros recede in both themes.
function diverging(th: Theme): [number, string][] {
  const mid = th.dark ? "#2f343b" : "#f7f7f7";
  return [
    [0, "#2166ac"],
    [0.25, "#67a9cf"],
    [0.5, mid],
    [0.75, "#ef8a62"],
    [1, "#b2182b"],
  ];
}

/** The finite min and max of `values` ([0, 0] when none). */
export function finiteRange(values: Float32Array): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return lo <= hi ? [lo, hi] : [0, 0];
}

/** Diverging around 0 when any value is negative, sequential from 0 otherwise. */
export function colorRange(lo: number, hi: number, th: Theme): ColorRange {
  if (lo < 0) {
    const m = Math.max(-lo, Math.abs(hi)) || 1;
    return { colorscale: diverging(th), zmin: -m, zmax: m, diverging: true };
  }
  return { colorscale: "Viridis", zmin: 0, zmax: hi > 0 ? hi : 1, diverging: false };
}

/**
 * The grey of NaN and ±Inf cells: far from the diverging scale's middle (the colour of 0,
 * near the background in both themes) and from every hue of RdBu and Viridis.
 */
export function noValueColor(th: Theme): string {
  return th.dark ? "#868e96" : "#a5abb2";
}

/** Magnitudes spanning more than this many decades read on a log scale: on a linear one all
 * but the largest values share the bottom colour (a gradient norm of 0.0027-2.19). */
export const LOG_DECADES = 2;

export interface ScaleChoice {
  mode: "linear" | "log";
  /** log10 of the largest over the smallest non-zero magnitude (0 with fewer than two). */
  decades: number;
}

/** The scale that tells `values` apart: log when their non-zero magnitudes span more than
 * LOG_DECADES decades, linear otherwise, and linear for signed data (a log of magnitudes
 * would fold -x onto x). NaN and ±Inf are not counted. */
export function pickScaleMode(values: Iterable<number>): ScaleChoice {
  let lo = Infinity;
  let hi = 0;
  let signed = false;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v < 0) signed = true;
    const a = Math.abs(v);
    if (a > 0) {
      lo = Math.min(lo, a);
      hi = Math.max(hi, a);
    }
  }
  const decades = hi > 0 ? Math.log10(hi / lo) : 0;
  return { mode: !signed && decades > LOG_DECADES ? "log" : "linear", decades };
}
