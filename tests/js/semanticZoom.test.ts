import { describe, expect, it } from "vitest";
import type { GroupNode } from "../../js/src/graph/tree";
import { elideMiddle, SMALL_PX } from "../../js/src/layout/labels";
import { type OverviewCandidate, overviewText, placeOverview } from "../../js/src/render/overviewLabels";
import { LABEL_MIN_SCALE, MIN_TEXT_PX, textLevel } from "../../js/src/render/zoomLevels";

const measure = (t: string): number => t.length * 7.5;
const VIEW = { x: 0, y: 0, w: 1000, h: 600 };
const cand = (
  key: string,
  text: string,
  box: OverviewCandidate["box"],
  open = false,
  depth = 1,
): OverviewCandidate => ({
  key,
  text,
  box,
  open,
  depth,
});
const overlap = (a: OverviewCandidate["box"], b: OverviewCandidate["box"]): boolean =>
  a.x < b.x + b.w && a.x + a.w > b.x && a.y < b.y + b.h && a.y + a.h > b.y;

describe("text level", () => {
  it("draws every label only while its smallest text stays readable", () => {
    expect(LABEL_MIN_SCALE * SMALL_PX).toBeCloseTo(MIN_TEXT_PX);
    expect(textLevel(1)).toBe("labels");
    expect(textLevel(LABEL_MIN_SCALE)).toBe("labels");
    expect(textLevel(0.34)).toBe("overview");
    expect(textLevel(0.17)).toBe("overview");
  });
});

describe("overview names", () => {
  it("names folded modules in their box, cut in the middle to fit, never overlapping", () => {
    const labels = placeOverview(
      [
        cand("@a", "GPT2Block h.0", { x: 100, y: 100, w: 40, h: 10 }),
        cand("@b", "GPT2Block h.1", { x: 100, y: 104, w: 40, h: 10 }), // right under a: left out
        cand("@c", "GPT2Block h.2", { x: 100, y: 140, w: 40, h: 10 }),
        cand("@far", "Linear lm_head", { x: 2000, y: 140, w: 40, h: 10 }), // off screen
      ],
      measure,
      VIEW,
    );
    expect(labels.map((l) => l.key)).toEqual(["@a", "@c"]);
    for (const l of labels) expect(l.text).toBe(elideMiddle(l.text, l.text.length));
    expect(overlap(labels[0], labels[1])).toBe(false);
  });

  it("puts an open box's title at its top left, outer boxes first, and skips stubs", () => {
    const labels = placeOverview(
      [
        cand("inner", "GPT2Attention attn", { x: 10, y: 12, w: 300, h: 100 }, true, 3),
        cand("outer", "GPT2Model transformer", { x: 8, y: 8, w: 400, h: 400 }, true, 1),
        cand("@tiny", "LayerNorm ln_f", { x: 500, y: 300, w: 4, h: 2 }),
      ],
      measure,
      VIEW,
    );
    expect(labels.map((l) => l.key)).toEqual(["outer"]); // inner's title would cover outer's
    expect(labels[0].x).toBeGreaterThanOrEqual(8);
    expect(labels[0].y).toBeGreaterThanOrEqual(8);
  });

  it("cuts a long name in the middle, letting it run a little past a narrow box", () => {
    const [l] = placeOverview(
      [cand("box", "BertSelfAttention encoder.layer.0.attention.self", { x: 0, y: 0, w: 100, h: 300 }, true)],
      measure,
      VIEW,
    );
    expect(l.text).toContain("…");
    expect(l.text.startsWith("BertSelf")).toBe(true);
    expect(l.w).toBeLessThanOrEqual(180 + 6);
  });

  it("writes a module as its class and where it is", () => {
    const g = (over: Partial<GroupNode>): GroupNode =>
      ({
        className: "GPT2Block",
        address: "transformer.h.3",
        kind: "module",
        nPasses: 1,
        pass: 1,
        nOps: 40,
        outShape: null,
        members: [],
        ...over,
      }) as unknown as GroupNode;
    expect(overviewText(g({}), "unrolled")).toBe("GPT2Block h.3");
    expect(overviewText(g({ className: "Linear", address: "lm_head" }), "unrolled")).toBe("Linear lm_head");
    expect(overviewText(g({ kind: "stack", members: ["transformer.h.0", "transformer.h.1"] }), "unrolled")).toBe(
      "GPT2Block ×2",
    );
  });
});
