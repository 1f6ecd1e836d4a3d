import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import {
  ACCELERATOR_PALETTE,
  CPU_COLOR,
  compareDevices,
  deviceColors,
  deviceCounts,
  itemDevices,
  META_COLOR,
  MIXED_COLOR,
  opDevices,
  shareBar,
} from "../../js/src/render/deviceOverlay";
import { textOn } from "../../js/src/render/overlay";
import { edge, nested, node, payload } from "./builders";

/** nested() with a's ops on cpu, b.0's on cuda:0, b.1's split between cuda:0 and cuda:1. */
function placed() {
  const p = nested();
  const on: Record<string, string> = { lin_1: "cpu", act_1: "cpu", x_1: "cuda:0", y_1: "cuda:0", x_2: "cuda:0" };
  on.y_2 = "cuda:1";
  const nodes = p.unrolled.nodes.map((n) => (n.kind === "op" ? { ...n, device: on[n.id] } : n));
  return { ...p, unrolled: { ...p.unrolled, nodes }, rolled: { ...p.rolled, nodes } };
}

describe("device colors", () => {
  it("orders cpu first, accelerators by type and index, meta last", () => {
    const devices = ["meta", "cuda:10", "mps", "cuda:2", "cpu", "cuda:0"];
    expect([...devices].sort(compareDevices)).toEqual(["cpu", "cuda:0", "cuda:2", "cuda:10", "mps", "meta"]);
  });

  it("gives every device a distinct color, cpu and meta always the same", () => {
    const colors = deviceColors(["cuda:1", "cpu", "meta", "cuda:0", "cuda:0"]);
    expect(colors.get("cpu")).toBe(CPU_COLOR);
    expect(colors.get("meta")).toBe(META_COLOR);
    expect(colors.get("cuda:0")).toBe(ACCELERATOR_PALETTE[0]);
    expect(colors.get("cuda:1")).toBe(ACCELERATOR_PALETTE[1]);
    expect(new Set(colors.values()).size).toBe(4);
    // cpu's color does not depend on what else ran
    expect(deviceColors(["cpu"]).get("cpu")).toBe(CPU_COLOR);
    expect(deviceColors(["cpu", "cuda:3", "xla:0"]).get("cpu")).toBe(CPU_COLOR);
    expect(deviceColors(["cpu"]).get("cpu")).not.toBe(MIXED_COLOR);
  });

  it("stays distinct past the palette, in rgb() that labels can be read on", () => {
    const many = Array.from({ length: 16 }, (_, i) => `cuda:${i}`);
    const colors = deviceColors(["cpu", "meta", ...many]);
    expect(new Set(colors.values()).size).toBe(18);
    for (const c of colors.values()) {
      expect(c).toMatch(/^rgb\(\d+,\d+,\d+\)$/);
      expect(["#ffffff", "#1f2933"]).toContain(textOn(c));
    }
  });
});

describe("devices of ops, items and the legend", () => {
  it("reads each op's device from the payload, leaving sources and device-less ops out", () => {
    const p = placed();
    p.unrolled.nodes.push(node("noout_1", [], { device: null }));
    const d = opDevices(p);
    expect(d.get("lin_1")).toBe("cpu");
    expect(d.has("input.0")).toBe(false); // a source, not an op
    expect(d.has("a.w")).toBe(false);
    expect(d.has("noout_1")).toBe(false);
    expect(opDevices(null).size).toBe(0);
  });

  it("counts the ops of each device, in device order", () => {
    const counts = deviceCounts(opDevices(placed()));
    expect(counts).toEqual([
      { device: "cpu", color: CPU_COLOR, count: 2 },
      { device: "cuda:0", color: ACCELERATOR_PALETTE[0], count: 3 },
      { device: "cuda:1", color: ACCELERATOR_PALETTE[1], count: 1 },
    ]);
  });

  it("colors a collapsed module by its one device, or as mixed with each device's share", () => {
    const p = placed();
    const m = buildModel(p, "unrolled");
    const devices = opDevices(p);
    const colors = deviceColors(devices.values());
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    const got = itemDevices(m, vis, devices, colors);
    expect(got.get("@a:1")).toEqual({
      fill: CPU_COLOR,
      mixed: false,
      shares: [{ device: "cpu", color: CPU_COLOR, count: 2 }],
    });
    const b = got.get("@b:1")!;
    expect(b.mixed).toBe(true);
    expect(b.fill).toBe(MIXED_COLOR);
    expect(b.shares.map((s) => [s.device, s.count])).toEqual([
      ["cuda:0", 3],
      ["cuda:1", 1],
    ]);
    expect(got.has("input.0")).toBe(false); // no device coloring: drawn by its kind

    // b open: b.0 ran on cuda:0 only, b.1 is still mixed; open b.1 and each op has its color
    const open = computeVisible(m, { expanded: new Set(["b"]), showParams: false });
    const inB = itemDevices(m, open, devices, colors);
    expect(inB.get("@b.0:1")?.fill).toBe(ACCELERATOR_PALETTE[0]);
    expect(inB.get("@b.1:1")?.mixed).toBe(true);
    const all = computeVisible(m, { expanded: new Set(["a", "b", "b.0", "b.1"]), showParams: false });
    const ops = itemDevices(m, all, devices, colors);
    expect([...ops.values()].some((d) => d.mixed)).toBe(false);
    expect(ops.get("y_2")?.fill).toBe(ACCELERATOR_PALETTE[1]);
    expect(ops.get("lin_1")?.fill).toBe(CPU_COLOR);
  });

  it("colors a rolled layer by its passes' devices, mixed when they differ", () => {
    const input = node("input.0", [], { kind: "input", func: "input.0" });
    const unrolled = [input, node("mm_1_1:1", [], { device: "cpu" }), node("mm_1_1:2", [], { device: "meta" })];
    const rolled = [input, node("mm_1_1", [], { nPasses: 2, passes: ["mm_1_1:1", "mm_1_1:2"], device: "cpu" })];
    const p = payload(unrolled, [edge("input.0", "mm_1_1:1"), edge("mm_1_1:1", "mm_1_1:2")]);
    const full = { ...p, rolled: { nodes: rolled, edges: [edge("input.0", "mm_1_1", [1])] } };
    const m = buildModel(full, "rolled");
    const devices = opDevices(full);
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    const got = itemDevices(m, vis, devices, deviceColors(devices.values())).get("mm_1_1")!;
    expect(got.mixed).toBe(true);
    expect(got.shares.map((s) => s.device)).toEqual(["cpu", "meta"]);
  });
});

describe("shareBar", () => {
  it("splits the width by share, every device visible", () => {
    const shares = [
      { device: "cpu", color: "a", count: 3 },
      { device: "meta", color: "b", count: 1 },
    ];
    const bar = shareBar(shares, 10, 100);
    expect(bar.map(([, , c]) => c)).toEqual(["a", "b"]);
    expect(bar[0][0]).toBe(10);
    expect(bar[0][1] + bar[1][1]).toBeCloseTo(100);
    expect(bar[0][1]).toBeCloseTo(2 + 96 * 0.75);
    expect(bar[1][0]).toBeCloseTo(10 + bar[0][1]);
    const tiny = shareBar([{ ...shares[0], count: 1000 }, shares[1]], 0, 50);
    expect(tiny[1][1]).toBeGreaterThanOrEqual(2);
    expect(shareBar([], 0, 50)).toEqual([]);
  });
});
