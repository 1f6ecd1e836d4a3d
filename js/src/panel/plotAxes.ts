// The index axes of a plot (token, channel, query token...): their range is the data's own
// extent, cells -0.5..n-0.5, never what Plotly pads around a constrained tile (a 4-wide tile
// read −15..18), and their ticks are spaced so that no two labels touch, for 1 cell or 10,000.

/** Plotly layout fragment. */
export type AxisLayout = Record<string, unknown>;

/** The range of an axis over `n` cells (reversed: row 0 at the top). */
export function indexRange(n: number, reversed = false): [number, number] {
  const r: [number, number] = [-0.5, Math.max(1, n) - 0.5];
  return reversed ? [r[1], r[0]] : r;
}

const DIGIT_EM = 0.62; // a digit's width per px of font size (system-ui; a little over)

/** The px a tick label of this axis takes along it: its width across, its height up. */
export function labelExtent(n: number, across: boolean, fontPx: number): number {
  if (!across) return fontPx * 1.25 + 3;
  const last = Math.max(0, n - 1);
  const chars = last >= 10000 ? last.toLocaleString("en-US").length : String(last).length; // Plotly writes 10,000
  return chars * fontPx * DIGIT_EM + 8;
}

/** The smallest step of 1, 2, 5, 10, 20, 50... cells whose ticks stand `labelPx` apart on an
 * axis of `n` cells drawn over `lengthPx`. */
export function tickStep(n: number, lengthPx: number, labelPx: number): number {
  const perCell = lengthPx / Math.max(1, n);
  for (let decade = 1; ; decade *= 10) {
    for (const m of [1, 2, 5]) {
      const step = m * decade;
      if (step * perCell >= labelPx || step >= n) return step;
    }
  }
}

/** The ticks of an axis of `n` cells `lengthPx` long: cell indices only (none past the last
 * cell, none between two), no two labels overlapping. */
export function indexTicks(n: number, lengthPx: number, across: boolean, fontPx: number): AxisLayout {
  const step = tickStep(n, lengthPx, labelExtent(n, across, fontPx));
  const tickvals = Array.from({ length: Math.ceil(Math.max(1, n) / step) }, (_, i) => i * step);
  return { tickmode: "array", tickvals, ticktext: tickvals.map(String), tickangle: 0 };
}

/** Whether a tile of `rows`×`cols` keeps square cells: only when that leaves it no thinner
 * than 1:3 (a 256×4 head's tile was a strip a few px wide); else the data fills the tile. */
export function squareCells(rows: number, cols: number): boolean {
  const r = Math.max(rows, cols) / Math.max(1, Math.min(rows, cols));
  return r <= 3;
}

/** What each index axis of a plot spans, by the layout key of the axis ("xaxis", "yaxis3"). */
export type IndexAxes = Record<string, number>;

interface FullAxis {
  _length?: number;
  tickfont?: { size?: number };
}

/** The tick spacing of each index axis for the px Plotly gave it (read from `_fullLayout`
 * after a draw): the relayout to apply, empty when every axis already fits. */
export function fittedTicks(full: Record<string, unknown>, axes: IndexAxes): AxisLayout {
  const out: AxisLayout = {};
  for (const [key, n] of Object.entries(axes)) {
    const ax = full[key] as (FullAxis & { tickvals?: number[] }) | undefined;
    if (!ax?._length) continue;
    const ticks = indexTicks(n, ax._length, key.startsWith("x"), ax.tickfont?.size ?? 10);
    const vals = ticks.tickvals as number[];
    if (ax.tickvals?.length === vals.length && ax.tickvals[1] === vals[1]) continue;
    out[`${key}.tickvals`] = vals;
    out[`${key}.ticktext`] = ticks.ticktext;
  }
  return out;
}
