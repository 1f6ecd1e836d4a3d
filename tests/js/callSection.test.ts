import { describe, expect, it } from "vitest";
import { argumentText, callNumbers, reachText } from "../../js/src/panel/callSection";

describe("the inspector's call section", () => {
  it("says what the kernel knows of an op's cost, and nothing it does not", () => {
    expect(callNumbers({ flops: 147456, timeMs: 0.0421, paramCount: 3168 })).toBe(
      "147,456 FLOPs · 0.042 ms · 3,168 params",
    );
    expect(callNumbers({ flops: null, timeMs: null, paramCount: 0 })).toBe("");
    expect(callNumbers({ flops: 0, timeMs: 1.5, paramCount: 0 })).toBe("0 FLOPs · 1.50 ms");
  });

  it("writes a value as `name = value` and a tensor by its producer", () => {
    const base = { output: 0, shape: null, default: false };
    expect(argumentText({ ...base, name: "is_causal", value: "False", producer: null })).toBe("is_causal = False");
    expect(argumentText({ ...base, name: "query", value: null, producer: "transpose_3_43" })).toBe(
      "query ← transpose_3_43",
    );
  });
});

describe("what became of an op's NaN/Inf", () => {
  it("says masked values never reach the output, and says nothing of finite ops", () => {
    expect(reachText("masked")).toContain("never reach the model's output");
    expect(reachText("reaches")).toContain("reach the model's output");
    expect(reachText(null)).toBe("");
  });
});
