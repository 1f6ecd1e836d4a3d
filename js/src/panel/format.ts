// Number and size formatting for the inspector.
export function fmtNum(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—"; // the kernel sends NaN/Inf stats as null
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return v.toExponential(3);
  return Number(v.toPrecision(5)).toString();
}

/**
 * An integer with thousands commas ("100,000"), as toLocaleString("en-US") writes it; the first
 * toLocaleString loads the browser's locale data (~30 ms), on the way to first paint.
 */
export function fmtCount(n: number): string {
  if (!Number.isSafeInteger(n)) return String(n);
  const digits = String(Math.abs(n));
  const head = digits.length % 3 || 3;
  let out = digits.slice(0, head);
  for (let i = head; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

export function fmtBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
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
