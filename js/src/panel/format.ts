// Every figure the widget prints goes through this file: one small family of formatters, each
// exact to the precision it shows (tests/js/format.test.ts reads each text back).
//   fmtNum      statistics in the inspector: 5 significant digits, exponent outside [1e-3, 1e5)
//   fmtCompact  legends, norms, changes: 3 significant digits with k/M/G/T/P ("140k", "1.2e-5")
//   fmtCount    integers exactly, with thousands commas ("139,840")
//   fmtBytes    sizes in binary units ("1.5 MiB"); fmtMegabytes in decimal ones ("3.2 MB")
//   fmtFixed, fmtPercent, fmtMs: a fixed number of decimals
// Plotly writes its own hover and tick numbers with d3-format: PLOT_NUMBER is the one format
// string given to it, the same 4 significant digits everywhere.

/** d3-format of every number Plotly prints in a hover ("%{z:.4g}"). */
export const PLOT_NUMBER = ".4g";

/** NaN and ±Infinity as a person reads them (and JavaScript's Number() reads them back). */
function notFinite(v: number): string {
  return Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
}

/** "1.20e-5" -> "1.2e-5", "1.00e+18" -> "1e+18": the mantissa without trailing zeros. */
function trimExponent(text: string): string {
  return text.replace(/\.?0+e/, "e");
}

/** A statistic (mean, std, min...): 5 significant digits; "—" for null (the kernel sends NaN/Inf
 * statistics as null). */
export function fmtNum(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  if (!Number.isFinite(v)) return notFinite(v);
  if (v === 0) return "0";
  const rounded = Number(v.toPrecision(5)); // 99999.5 -> 100000: decide the form after rounding
  const a = Math.abs(rounded);
  if (a >= 1e5 || a < 1e-3) return trimExponent(v.toExponential(4));
  return rounded.toString();
}

const SI = ["", "k", "M", "G", "T", "P"];

/** A value on a legend, a norm, a change: 3 significant digits, thousands as k/M/G/T/P
 * (139,840 -> "140k", 1.2e9 -> "1.2G"), small ones as an exponent (1.2e-5). */
export function fmtCompact(v: number, digits = 3): string {
  if (!Number.isFinite(v)) return notFinite(v);
  if (v === 0) return "0";
  const sign = v < 0 ? "-" : "";
  // round first, then pick the unit: 999,950 is "1M", not "1000k"
  let x = Number(Math.abs(v).toPrecision(digits));
  if (x < 1e-3) return trimExponent(v.toExponential(digits - 1));
  let unit = 0;
  while (x >= 1000 && unit < SI.length - 1) {
    x = Number((x / 1000).toPrecision(digits));
    unit++;
  }
  if (x >= 1000) return trimExponent(v.toExponential(digits - 1)); // past P
  return `${sign}${x}${SI[unit]}`;
}

/**
 * An integer exactly, with thousands commas ("100,000"), as toLocaleString("en-US") writes it
 * (without its ~30 ms of locale loading on the way to first paint). Past 2^53 the digits are
 * those of the double, as written by BigInt; a fraction goes to fmtNum.
 */
export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) return notFinite(n);
  if (!Number.isInteger(n)) return fmtNum(n);
  const digits = BigInt(Math.abs(n)).toString();
  const head = digits.length % 3 || 3;
  let out = digits.slice(0, head);
  for (let i = head; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

const BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/** A size in binary units: "512 B", "32.0 KiB", "1.5 MiB" (one decimal below 100 of a unit). */
export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return `${notFinite(n)} B`;
  if (Math.abs(n) < 1024) return `${n} B`;
  let i = 0;
  let v = Math.abs(n);
  const shown = (x: number): string => x.toFixed(x >= 99.95 ? 0 : 1);
  // the unit is chosen on the rounded text: 1,048,575 B is "1.0 MiB", not "1024 KiB"
  while (i < BINARY.length - 1 && Number(shown(v)) >= 1024) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? "-" : ""}${shown(v)} ${BINARY[i]}`;
}

/** Bytes in decimal megabytes, 3 significant digits: "3.2 MB" (the page's size limits). */
export function fmtMegabytes(bytes: number): string {
  return `${fmtCompact(bytes / 1e6)} MB`;
}

/** `v` with `decimals` decimals ("2.3"); NaN and ±Infinity in words. */
export function fmtFixed(v: number, decimals: number): string {
  return Number.isFinite(v) ? v.toFixed(decimals) : notFinite(v);
}

/** A fraction as a percentage: 0.123 -> "12.3%". */
export function fmtPercent(fraction: number, decimals = 1): string {
  return `${fmtFixed(fraction * 100, decimals)}%`;
}

/** A duration in milliseconds: 2 decimals, 2 significant digits below 0.1 ms ("0.042 ms"). */
export function fmtMs(ms: number): string {
  const text = Number.isFinite(ms) && Math.abs(ms) < 0.1 && ms !== 0 ? ms.toPrecision(2) : fmtFixed(ms, 2);
  return `${text} ms`;
}

export function fmtShape(shape: number[] | null): string {
  if (!shape) return "—";
  return shape.length === 0 ? "scalar" : `(${shape.join(", ")})`;
}

/** ".../transformers/models/gpt2/modeling_gpt2.py:63" -> "gpt2/modeling_gpt2.py:63" */
export function shortPath(source: string): string {
  const parts = source.split(/[\\/]/);
  return parts.length > 3 ? `…/${parts.slice(-2).join("/")}` : source;
}

/** What a gradient plot shows, in words: of one backward pass, or summed over `nPasses`. */
export function gradientCaption(c: { backwardPass?: number; nPasses: number }): string {
  const which = c.backwardPass
    ? `backward pass ${c.backwardPass}`
    : c.nPasses > 1
      ? `summed over ${c.nPasses} backward passes`
      : "";
  return ["gradient of the loss w.r.t. this output", which].filter(Boolean).join(", ");
}
