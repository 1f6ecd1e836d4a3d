import { describe, expect, it } from "vitest";
import { fmtBytes, fmtCount, fmtNum, fmtShape, shortPath } from "../../js/src/panel/format";

describe("format", () => {
  it("formats numbers compactly", () => {
    expect(fmtNum(0)).toBe("0");
    expect(fmtNum(0.123456789)).toBe("0.12346");
    expect(fmtNum(123456789)).toBe("1.235e+8");
    expect(fmtNum(NaN)).toBe("NaN");
    expect(fmtNum(null)).toBe("—");
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
