// What a plot cannot draw: no values at all (an empty tensor), and values off every scale
// (NaN, ±Inf). Plotly leaves non-finite cells as gaps, which show the background: white or
// the dark panel, i.e. the colour of 0 on the diverging scale. These helpers find them, so
// that the plots can grey them out and say how many there are.

export interface NonFiniteCount {
  nan: number;
  inf: number; // +Inf and -Inf together, as the stats table counts them
}

export function countNonFinite(values: Float32Array): NonFiniteCount {
  let nan = 0;
  let inf = 0;
  for (const v of values) {
    if (Number.isNaN(v)) nan++;
    else if (!Number.isFinite(v)) inf++;
  }
  return { nan, inf };
}

/** What a hover says in place of a number. */
export function nonFiniteText(v: number): string {
  return Number.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

/**
 * The `r`×`c` block at `offset` as an overlay: 1 where a value is not finite, null (a gap)
 * elsewhere, with the hover text of each; null when the whole block is finite.
 */
export function nonFiniteMask(
  values: Float32Array,
  r: number,
  c: number,
  offset = 0,
): { z: (number | null)[][]; text: string[][] } | null {
  let any = false;
  const z: (number | null)[][] = [];
  const text: string[][] = [];
  for (let i = 0; i < r; i++) {
    const zr: (number | null)[] = new Array(c).fill(null);
    const tr: string[] = new Array(c).fill("");
    for (let j = 0; j < c; j++) {
      const v = values[offset + i * c + j];
      if (!Number.isFinite(v)) {
        zr[j] = 1;
        tr[j] = nonFiniteText(v);
        any = true;
      }
    }
    z.push(zr);
    text.push(tr);
  }
  return any ? { z, text } : null;
}

/** Where a line plot marks its non-finite points, in the plot's height (0 bottom, 1 top):
 * +Inf at the top edge, -Inf and NaN at the bottom, each with its own symbol. */
export interface Marks {
  x: number[];
  y: number[];
  symbol: string[];
  text: string[];
}

export function nonFiniteMarks(values: Float32Array, xs: number[]): Marks {
  const m: Marks = { x: [], y: [], symbol: [], text: [] };
  values.forEach((v, i) => {
    if (Number.isFinite(v)) return;
    m.x.push(xs[i]);
    m.y.push(v > 0 ? 0.96 : 0.04);
    m.symbol.push(Number.isNaN(v) ? "x" : v > 0 ? "triangle-up" : "triangle-down");
    m.text.push(nonFiniteText(v));
  });
  return m;
}

/**
 * Marker sizes that show the finite points a line cannot draw (no finite neighbour: a line
 * breaks at NaN, so a lone point between two would vanish); null when there are none.
 */
export function lonePoints(values: Float32Array, size: number): number[] | null {
  const ok = (i: number): boolean => i >= 0 && i < values.length && Number.isFinite(values[i]);
  let any = false;
  const sizes = Array.from(values, (_, i) => {
    const lone = ok(i) && !ok(i - 1) && !ok(i + 1);
    any ||= lone;
    return lone ? size : 0;
  });
  return any ? sizes : null;
}

/** "3 NaN, 1 Inf cells shown grey" under a heatmap; "" when every value is finite. */
export function nonFiniteNote(c: NonFiniteCount, unit: "cell" | "point"): string {
  const parts = [c.nan ? `${c.nan} NaN` : "", c.inf ? `${c.inf} Inf` : ""].filter(Boolean);
  if (!parts.length) return "";
  const noun = c.nan + c.inf === 1 ? unit : `${unit}s`;
  const how = unit === "cell" ? "shown grey" : "marked grey (× NaN, ▲▼ ±Inf)";
  return `${parts.join(", ")} ${noun} ${how}`;
}

/** "empty tensor: shape 4×0, no values" */
export function emptyMessage(shape: number[]): string {
  return `empty tensor: shape ${shape.join("×")}, no values`;
}
