import { describe, expect, it } from "vitest";
import { wheelZoom } from "../../js/src/controls/canvasInput";
import type { GroupNode } from "../../js/src/graph/tree";
import { clipMiddle, groupLines } from "../../js/src/layout/labels";
import { colorRange, finiteRange } from "../../js/src/panel/colorScale";
import { indexCaption } from "../../js/src/panel/pickers";
import { DARK, hostSaysDark, LIGHT } from "../../js/src/render/theme";

describe("colour scales", () => {
  it("centres signed data at 0 with a symmetric range", () => {
    const r = colorRange(-2, 6, LIGHT);
    expect(r.diverging).toBe(true);
    expect([r.zmin, r.zmax]).toEqual([-6, 6]);
    expect(colorRange(-3, 1, LIGHT)).toMatchObject({ zmin: -3, zmax: 3 });
    expect(colorRange(-3, 0, DARK)).toMatchObject({ zmin: -3, zmax: 3, diverging: true });
  });

  it("starts non-negative data at 0 on a sequential scale", () => {
    expect(colorRange(0.5, 4, LIGHT)).toMatchObject({ colorscale: "Viridis", zmin: 0, zmax: 4, diverging: false });
    expect(colorRange(0, 0, LIGHT)).toMatchObject({ zmin: 0, zmax: 1 });
  });

  it("ignores NaN and infinities when finding the range", () => {
    expect(finiteRange(new Float32Array([NaN, -1, Infinity, 3, -Infinity]))).toEqual([-1, 3]);
    expect(finiteRange(new Float32Array([NaN]))).toEqual([0, 0]);
  });
});

describe("wheel zoom", () => {
  it("zooms in on a wheel up and out on a wheel down, by at most e^0.5 per event", () => {
    expect(wheelZoom(-100, 0, false)).toBeGreaterThan(1);
    expect(wheelZoom(100, 0, false)).toBeLessThan(1);
    expect(wheelZoom(-10000, 0, true)).toBeCloseTo(Math.exp(0.5));
    expect(wheelZoom(3, 1, false)).toBeCloseTo(wheelZoom(48, 0, false));
  });

  it("zooms a trackpad pinch (small ctrl+wheel deltas) faster than a plain wheel pixel", () => {
    expect(wheelZoom(-5, 0, true)).toBeGreaterThan(wheelZoom(-5, 0, false));
  });
});

describe("labels", () => {
  it("cuts a deep module address in the middle, keeping where it is and what tells siblings apart", () => {
    const address = "model.encoder.layers.11.self_attention.query_key_value";
    const clipped = clipMiddle(address);
    expect(clipped.startsWith("model.encoder")).toBe(true);
    expect(clipped.endsWith("query_key_value")).toBe(true);
    expect(clipped).toContain("…");
    expect(clipped.length).toBeLessThanOrEqual(34);
    expect(clipMiddle("h.0.attn")).toBe("h.0.attn");
    const g = { className: "Linear", address, nPasses: 1, pass: 1, nOps: 1, outShape: [2, 3] } as unknown as GroupNode;
    expect(groupLines(g, "unrolled")[1]).toBe(clipped);
  });

  it("writes a picked index the way the kernel's notes do", () => {
    expect(indexCaption("batch", 0, 2)).toBe("batch 0 of 2");
    expect(indexCaption("head", 3, 4)).toBe("head 3 of 4");
  });
});

describe("host theme", () => {
  const doc = (dataset: Record<string, string>, className = ""): Document =>
    ({ body: { dataset, className } }) as unknown as Document;

  it("reads JupyterLab's and Notebook 7's data-jp-theme-light", () => {
    expect(hostSaysDark(doc({ jpThemeLight: "false" }))).toBe(true);
    expect(hostSaysDark(doc({ jpThemeLight: "true" }))).toBe(false);
  });

  it("reads VS Code's body classes and theme kind", () => {
    expect(hostSaysDark(doc({}, "vscode-body vscode-dark"))).toBe(true);
    expect(hostSaysDark(doc({}, "vscode-high-contrast"))).toBe(true);
    expect(hostSaysDark(doc({}, "vscode-light"))).toBe(false);
    expect(hostSaysDark(doc({ vscodeThemeKind: "vscode-high-contrast-light" }))).toBe(false);
    expect(hostSaysDark(doc({}, "some-page"))).toBe(null);
  });
});
