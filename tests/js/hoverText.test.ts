import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { hoverText } from "../../js/src/render/hoverText";
import { nested } from "./builders";

describe("hover text", () => {
  const m = buildModel(nested(), "unrolled");

  it("gives a module's class, whole address and what it holds, and what a click does", () => {
    const key = [...m.groups.keys()].find((k) => k.startsWith("b.0"))!;
    const open = hoverText(m, { type: "item", id: `@${key}` });
    expect(open).toContain("b.0");
    expect(open).toMatch(/· 2 ops/);
    expect(open.endsWith("(click to open)")).toBe(true);
    expect(hoverText(m, { type: "header", box: key }).endsWith("(click to collapse)")).toBe(true);
  });

  it("gives an op's name, id, shape and module; nothing over nothing", () => {
    expect(hoverText(m, { type: "item", id: "y_2" })).toBe("y · y_2 → 1×2 · in b.1");
    expect(hoverText(m, null)).toBe("");
  });
});
