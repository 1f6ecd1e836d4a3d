import { describe, expect, it } from "vitest";
import {
  fmtBytes,
  fmtCompact,
  fmtCount,
  fmtFixed,
  fmtMegabytes,
  fmtMs,
  fmtNum,
  fmtPercent,
  fmtShape,
  shortPath,
} from "../../js/src/panel/format";

const SI: Record<string, number> = { "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15 };
const BINARY: Record<string, number> = { B: 1, KiB: 2 ** 10, MiB: 2 ** 20, GiB: 2 ** 30, TiB: 2 ** 40, PiB: 2 ** 50 };

/** The value a printed number says, and half a step of its last digit shown: the value it
 * stands for lies within `half` of `value`. */
function readBack(text: string, units: Record<string, number> = SI): { value: number; half: number } {
  if (text === "NaN") return { value: NaN, half: 0 };
  if (text === "Infinity" || text === "-Infinity") return { value: Number(text), half: 0 };
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?\s?([A-Za-z]*)$/.exec(text.replace(/,/g, ""));
  if (!m || !(m[5] in units)) throw new Error(`cannot read ${JSON.stringify(text)}`);
  const decimals = m[3]?.length ?? 0;
  const scale = 10 ** Number(m[4] ?? 0) * units[m[5]];
  return { value: Number(`${m[1]}${m[2]}.${m[3] ?? "0"}`) * scale, half: 0.5 * 10 ** -decimals * scale };
}

/** Every magnitude from 1e-9 to 1e15, at digits that round up to the next unit (9.9996),
 * halfway (2.5), and plain ones; negative too. */
const VALUES: number[] = [];
for (let e = -9; e <= 15; e++)
  for (const m of [1, 1.0004, 1.5, 2.345678, 3.25, 5, 9.99, 9.995, 9.9996]) VALUES.push(m * 10 ** e, -m * 10 ** e);

function expectWithin(text: string, v: number, relative: number, units?: Record<string, number>): void {
  const { value, half } = readBack(text, units);
  const slack = 1e-9 * Math.abs(v);
  expect(Math.abs(value - v), `${v} printed "${text}"`).toBeLessThanOrEqual(half + slack);
  expect(Math.abs(value - v) / Math.abs(v), `${v} printed "${text}"`).toBeLessThanOrEqual(relative + 1e-12);
}

describe("every figure reads back as the value it stands for", () => {
  it("fmtCompact (legends, norms, changes): 3 significant digits, within the last digit shown", () => {
    for (const v of VALUES) expectWithin(fmtCompact(v), v, 5e-3);
  });

  it("fmtNum (statistics): 5 significant digits", () => {
    for (const v of VALUES) expectWithin(fmtNum(v), v, 5e-5);
  });

  it("fmtCount: integers exactly, with thousands commas", () => {
    for (const v of VALUES) {
      const n = Math.round(v);
      if (n === 0) continue;
      expect(readBack(fmtCount(n)).value).toBe(n);
      expect(fmtCount(n)).toMatch(/^-?\d{1,3}(,\d{3})*$/);
    }
    expect(fmtCount(139840)).toBe("139,840");
    expect(fmtCount(1e16)).toBe("10,000,000,000,000,000"); // past 2^53: no exponent
  });

  it("fmtBytes: binary units, within the decimal shown", () => {
    for (const v of VALUES.filter((x) => Math.abs(x) >= 1 && Number.isInteger(x)))
      expectWithin(fmtBytes(v), v, 5e-2 / 1.0, BINARY);
    expect(fmtBytes(1048575)).toBe("1.0 MiB"); // not "1024 KiB"
    expect(fmtBytes(1023)).toBe("1023 B");
  });

  it("fmtPercent, fmtFixed, fmtMs, fmtMegabytes", () => {
    for (const v of VALUES.filter((x) => Math.abs(x) >= 1e-3 && Math.abs(x) < 1e12)) {
      const pct = fmtPercent(v);
      expect(pct.endsWith("%")).toBe(true);
      expect(Math.abs(readBack(pct.slice(0, -1)).value - v * 100)).toBeLessThanOrEqual(0.05 + 1e-9 * Math.abs(v) * 100);
      expect(Math.abs(Number(fmtFixed(v, 2)) - v)).toBeLessThanOrEqual(0.005 + 1e-9 * Math.abs(v));
      const ms = fmtMs(v);
      expect(ms.endsWith(" ms")).toBe(true);
      expectWithin(ms.slice(0, -3), v, Math.abs(v) < 0.1 ? 5e-2 : 0.005 / Math.abs(v));
      expectWithin(fmtMegabytes(v * 1e6).replace(" MB", ""), v, 5e-3);
    }
  });

  it("the regressions: 100,000 was '1k', 120M was '12M', 139,840 was '14k'", () => {
    expect(fmtCompact(100_000)).toBe("100k");
    expect(fmtCompact(120e6)).toBe("120M");
    expect(fmtCompact(139_840)).toBe("140k");
    expect(fmtCompact(10)).toBe("10");
    expect(fmtCompact(999.95)).toBe("1k"); // rounds up into the next unit, not "1.00e+3"
    expect(fmtCompact(999_950)).toBe("1M"); // not "1000k"
    expect(fmtCompact(-2048)).toBe("-2.05k");
    expect(fmtCompact(1.5e9)).toBe("1.5G");
    expect(fmtCompact(0.5)).toBe("0.5");
    expect(fmtCompact(1.2e-5)).toBe("1.2e-5");
    expect(fmtCompact(3e18)).toBe("3e+18"); // past P
  });

  it("zero, NaN and ±Infinity in words, the same in every formatter", () => {
    for (const f of [fmtCompact, fmtNum, fmtCount]) expect(f(0)).toBe("0");
    expect(fmtFixed(0, 2)).toBe("0.00");
    for (const f of [fmtCompact, fmtNum, fmtCount, (v: number) => fmtFixed(v, 2)]) {
      expect(f(NaN)).toBe("NaN");
      expect(f(Infinity)).toBe("Infinity");
      expect(f(-Infinity)).toBe("-Infinity");
    }
    expect(fmtCompact(-0)).toBe("0");
    expect(fmtNum(null)).toBe("—");
    expect(fmtPercent(NaN)).toBe("NaN%");
    expect(fmtBytes(NaN)).toBe("NaN B");
    expect(fmtMs(0)).toBe("0.00 ms");
  });
});

describe("format", () => {
  it("formats statistics with 5 significant digits", () => {
    expect(fmtNum(0.123456789)).toBe("0.12346");
    expect(fmtNum(123456789)).toBe("1.2346e+8");
    expect(fmtNum(99999.5)).toBe("1e+5"); // rounds up past the exponent threshold
  });

  it('writes counts with thousands commas, as toLocaleString("en-US") does', () => {
    for (const n of [0, 7, 999, 1000, 12345, 100000, 1234567, -4321, 2 ** 53 - 1])
      expect(fmtCount(n)).toBe(n.toLocaleString("en-US"));
    expect(fmtCount(1.5)).toBe("1.5");
  });

  it("formats sizes and shapes", () => {
    expect(fmtBytes(512)).toBe("512 B");
    expect(fmtBytes(32768)).toBe("32.0 KiB");
    expect(fmtShape([2, 3])).toBe("(2, 3)");
    expect(fmtShape([])).toBe("scalar");
    expect(fmtShape(null)).toBe("—");
  });

  it("shortens source paths to their last two parts", () => {
    expect(shortPath("/a/b/transformers/models/gpt2/modeling_gpt2.py:63")).toBe("…/gpt2/modeling_gpt2.py:63");
    expect(shortPath("model.py:1")).toBe("model.py:1");
  });
});
