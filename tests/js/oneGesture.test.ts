// One gesture to the op (#36 item 6): a double click on a module goes down through its ×N stack
// to the first block's contents; a first view that fits opens more modules, biggest first,
// while the whole still fits at FIRST_OPEN_SCALE.
import { describe, expect, it } from "vitest";
import { growCandidates } from "../../js/src/graph/defaultExpansion";
import { openedDown } from "../../js/src/graph/dive";
import { stackKey } from "../../js/src/graph/folds";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible, toggledGroup } from "../../js/src/graph/visibility";
import { FIRST_OPEN_SCALE, FIRST_READ_SCALE, FitSearch, wholeScale } from "../../js/src/render/camera";
import { gpt } from "./builders";

const W = 800;
const H = 600;
const box = (h: number) => ({ x: 0, y: 0, w: 300, h });

describe("a double click on a module", () => {
  it("opens it down to its first block's contents, not to N closed blocks", () => {
    const m = buildModel(gpt(4), "unrolled");
    const stack = stackKey(["t.h.0", "t.h.1", "t.h.2", "t.h.3"]);
    const key = [...m.groups.values()].find((g) => g.address === "t")!.key;
    const once = toggledGroup(m, key, true, new Set())!;
    const down = openedDown(m, key, new Set())!;
    expect([...once]).toEqual(["t"]);
    expect(down.has("t") && down.has(stack) && down.has("t.h.0")).toBe(true);
    expect(down.has("t.h.1")).toBe(false); // the other blocks stay closed in the stack
    // what a person sees: block 0's ops (its lone mlp opened too), where one click showed the stack
    const ids = (e: Set<string>) => computeVisible(m, { expanded: e, showParams: false }).items.map((i) => i.id);
    expect(ids(once)).toContain(`@${stack}`);
    expect(ids(once)).not.toContain("a_0");
    expect(ids(down)).toContain("a_0");
    expect(ids(down)).toContain("b_0");
    expect(ids(down)).toContain(`@t.h.1:1`);
  });
});

describe("a first view that fits", () => {
  const levels = [[], ["t"]];
  const grow = (e: string[]) => ["big", "mid", "small"].filter((a) => !e.includes(a));

  it("opens the biggest closed modules while the whole fits at 70%", () => {
    const s = new FitSearch(levels, 0, grow);
    const roomy = box(300);
    const tight = box(780); // fits at ~0.71
    const tooBig = box(1200);
    expect(wholeScale(roomy, W, H)).toBeGreaterThanOrEqual(FIRST_READ_SCALE);
    expect(wholeScale(tight, W, H)).toBeGreaterThanOrEqual(FIRST_OPEN_SCALE);
    expect(wholeScale(tooBig, W, H)).toBeLessThan(FIRST_OPEN_SCALE);
    expect(s.next(roomy, W, H)).toEqual(["t", "big"]);
    expect(s.next(tooBig, W, H)).toEqual(["t", "mid"]); // big did not fit: refused, next
    expect(s.next(tight, W, H)).toEqual(["t", "mid", "small"]);
    expect(s.next(tooBig, W, H)).toEqual(["t", "mid"]); // none left: the kept one laid out again
    expect(s.next(tight, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t", "mid"]);
  });

  it("keeps a deeper level legible at 50-75% when the lowest can open nothing that fits", () => {
    const s = new FitSearch([[], ["t"]], 0, grow);
    const legible = box(900); // 0.61
    expect(s.next(legible, W, H)).toEqual([]); // the default at 61%: the lowest is tried
    expect(s.next(box(300), W, H)).toEqual(["big"]); // it reads: grow it
    expect(s.next(box(1200), W, H)).toEqual(["mid"]);
    expect(s.next(box(1200), W, H)).toEqual(["small"]);
    expect(s.next(box(1200), W, H)).toEqual(["t"]); // none fit: the legible level after all
    expect(s.next(legible, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t"]);
  });

  it("offers the shown closed modules of more than one op, biggest first", () => {
    const m = buildModel(gpt(3), "unrolled");
    expect(growCandidates(m)([])).toEqual(["t"]);
    // inside t: the stack stays closed (a double click opens it); head is one op
    expect(growCandidates(m)(["t"])).toEqual([]);
  });
});
