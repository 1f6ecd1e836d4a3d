import { describe, expect, it } from "vitest";
import { DEFAULT_METRICS } from "../../js/src/layout/labels";
import { heightFloor, SizeCache } from "../../js/src/layout/scenePlan";
import { pickAnchor, placeAnchor } from "../../js/src/render/anchor";
import { FIRST_MIN_SCALE, FIRST_READ_SCALE, FitSearch, mayFitHeight, wholeScale } from "../../js/src/render/camera";
import type { Frame } from "../../js/src/render/frame";
import { miniFit, partlyOffScreen } from "../../js/src/render/minimap";
import { gpt, wide } from "./builders";
import { allGroups, crossings, laidOut } from "./geometry";

const W = 800;
const H = 600;

describe("FitSearch", () => {
  const levels = [[], ["t"], ["t", "t.a"]];
  const tall = { x: 0, y: 0, w: 300, h: 3000 };
  const fits = { x: 0, y: 0, w: 300, h: 700 };
  const legible = { x: 0, y: 0, w: 300, h: 900 };

  it("keeps the default when it fits at a readable zoom", () => {
    const s = new FitSearch(levels, 0);
    expect(s.expansion).toEqual(["t", "t.a"]);
    expect(wholeScale(fits, W, H)).toBeGreaterThanOrEqual(FIRST_READ_SCALE);
    expect(s.next(fits, W, H)).toBeNull();
  });

  it("prefers less detail read without effort to more detail at a small zoom", () => {
    const s = new FitSearch(levels, 0);
    expect(wholeScale(legible, W, H)).toBeGreaterThanOrEqual(FIRST_MIN_SCALE);
    expect(wholeScale(legible, W, H)).toBeLessThan(FIRST_READ_SCALE);
    expect(s.next(legible, W, H)).toEqual(["t"]);
    expect(s.next(fits, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t"]);
  });

  it("prefers a deeper legible level to the lowest one read without effort", () => {
    const s = new FitSearch(levels, 1);
    // the default is legible: `lowest` would lose to it whatever its size, so it is not laid out
    expect(s.next(legible, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t", "t.a"]);
  });

  it("keeps the deepest legible level when none reads without effort", () => {
    const s = new FitSearch(levels, 0);
    expect(s.next(legible, W, H)).toEqual(["t"]);
    // back to the first that fit, `lowest` ([]) not laid out: it would lose to that one
    expect(s.next(tall, W, H)).toEqual(["t", "t.a"]);
    expect(s.next(legible, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t", "t.a"]);
  });

  it("closes the deepest level until the graph fits", () => {
    const s = new FitSearch(levels, 0);
    expect(s.next(tall, W, H)).toEqual(["t"]);
    expect(s.next(fits, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t"]);
    expect(s.next(tall, W, H)).toBeNull(); // settled
  });

  it("goes back to the default when no level from `lowest` up fits", () => {
    const s = new FitSearch(levels, 1);
    expect(s.next(tall, W, H)).toEqual(["t"]);
    expect(s.next(tall, W, H)).toEqual(["t", "t.a"]);
    expect(s.next(tall, W, H)).toBeNull();
    expect(s.expansion).toEqual(["t", "t.a"]);
  });
});

describe("FitSearch, every case of up to four levels", () => {
  // a level's zoom to fit W x H: too small to read, legible (FIRST_MIN_SCALE..FIRST_READ_SCALE), read without effort
  const heights = { tall: 3000, legible: 900, fits: 700 } as const;
  type Size = keyof typeof heights;
  const scaleOf = (size: Size): number => wholeScale({ x: 0, y: 0, w: 300, h: heights[size] }, W, H);

  /** The level the docstring's rule picks, from every level's size. */
  function rule(sizes: Size[], lowest: number): number {
    const last = sizes.length - 1;
    for (let i = last; i > lowest; i--) if (scaleOf(sizes[i]) >= FIRST_READ_SCALE) return i;
    for (let i = last; i > lowest; i--) if (scaleOf(sizes[i]) >= FIRST_MIN_SCALE) return i;
    return scaleOf(sizes[lowest]) >= FIRST_MIN_SCALE ? lowest : last;
  }

  function* cases(n: number): Generator<Size[]> {
    if (n === 0) yield [];
    else for (const rest of cases(n - 1)) for (const s of Object.keys(heights) as Size[]) yield [...rest, s];
  }

  it("picks the level the rule says, and never lays out `lowest` once a deeper level is legible", () => {
    let checked = 0;
    for (let n = 1; n <= 4; n++) {
      const levels = Array.from({ length: n }, (_, i) => Array.from({ length: i }, (_, j) => `m${j}`));
      for (let lowest = 0; lowest < n; lowest++) {
        for (const sizes of cases(n)) {
          const s = new FitSearch(levels, lowest);
          const laid: number[] = [];
          let at = n - 1;
          for (let step = 0; step < 2 * n + 2; step++) {
            laid.push(at);
            const next = s.next({ x: 0, y: 0, w: 300, h: heights[sizes[at]] }, W, H);
            if (next === null) break;
            at = levels.indexOf(next);
          }
          const chosen = levels.indexOf(s.expansion);
          expect(chosen, `${sizes} lowest ${lowest}`).toBe(rule(sizes, lowest));
          const deeperLegible = laid.some((i) => i > lowest && scaleOf(sizes[i]) >= FIRST_MIN_SCALE);
          if (deeperLegible && lowest < n - 1) expect(laid, `${sizes} lowest ${lowest}`).not.toContain(lowest);
          // each level laid out once, the one gone back to aside (its layout is cached)
          expect(new Set(laid.slice(0, -1)).size).toBe(laid.length - 1);
          checked++;
        }
      }
    }
    expect(checked).toBe(3 + 2 * 9 + 3 * 27 + 4 * 81);
  });
});

describe("FitSearch with a height floor", () => {
  it("passes over levels that cannot fit without laying them out", () => {
    const levels = [[], ["t"], ["t", "t.a"], ["t", "t.a", "t.b"]];
    const s = new FitSearch(levels, 0);
    const tried: string[][] = [];
    const next = s.next({ x: 0, y: 0, w: 300, h: 3000 }, W, H, (e) => {
      tried.push(e);
      return e.length === 0;
    });
    expect(tried).toEqual([["t", "t.a"], ["t"], []]);
    expect(next).toEqual([]);
  });

  it("is a floor: no layout is lower than it", () => {
    for (const [p, open] of [
      [gpt(), ["t"]],
      [gpt(5), ["t", "t.h.0×5", "t.h.2", "head"]],
      [wide(6, 3, 4), ["m1", "m1.s0", "m2"]],
      [wide(6, 3, 4), []],
    ] as const) {
      const { v, scene, m } = laidOut(p, [...open]);
      const floor = heightFloor(v, new SizeCache(m, DEFAULT_METRICS));
      expect(floor).toBeGreaterThan(0);
      expect(floor).toBeLessThanOrEqual(scene.bounds.h + 1e-6);
      expect(mayFitHeight(floor, H)).toBe(floor * FIRST_MIN_SCALE <= H - 48);
    }
  });
});

describe("view anchors", () => {
  const { m, v, scene, geoms } = laidOut(gpt(), ["t"]);
  const frame: Frame = { model: m, vis: v, scene, edges: geoms };
  const cam = { scale: 0.7, tx: 40, ty: -30 };

  it("keeps the selected item where it is on screen", () => {
    const a = pickAnchor(frame, cam, W, H, "emb_1_1")!;
    const r = scene.items.get("emb_1_1")!;
    expect(a.node).toBe("emb_1_1");
    expect(a.sx).toBeCloseTo((r.x + r.w / 2) * 0.7 + 40);
    const moved = { ...r, x: r.x + 500, y: r.y - 200 };
    const next = placeAnchor(a, moved);
    expect(next.scale).toBe(0.7);
    expect((moved.x + moved.w / 2) * next.scale + next.tx).toBeCloseTo(a.sx);
    expect((moved.y + moved.h / 2) * next.scale + next.ty).toBeCloseTo(a.sy);
  });

  it("else takes the item nearest the middle, a module by its first op", () => {
    const stack = scene.items.get("@t.h.0×3")!;
    const centred = { scale: 1, tx: W / 2 - (stack.x + stack.w / 2), ty: H / 2 - (stack.y + stack.h / 2) };
    expect(pickAnchor(frame, centred, W, H, null)!.node).toBe("a_0");
    // a selection off screen does not count
    const off = { scale: 1, tx: centred.tx, ty: centred.ty + 5000 };
    expect(pickAnchor(frame, off, W, H, "emb_1_1")!.node).not.toBe("emb_1_1");
  });
});

describe("minimap", () => {
  it("fits the graph in at most 180 x 140, keeping its shape", () => {
    const f = miniFit({ x: 0, y: 0, w: 1000, h: 4000 });
    expect(f.h).toBeLessThanOrEqual(140);
    expect(f.w).toBeLessThan(f.h);
    const wide = miniFit({ x: 0, y: 0, w: 4000, h: 1000 });
    expect(wide.w).toBeLessThanOrEqual(180);
    expect(wide.scale * 4000).toBeLessThanOrEqual(180);
  });

  it("shows only when part of the graph is off screen", () => {
    const view = { x: 0, y: 0, w: 800, h: 600 };
    expect(partlyOffScreen({ x: 10, y: 10, w: 700, h: 500 }, view)).toBe(false);
    expect(partlyOffScreen({ x: 10, y: 10, w: 700, h: 900 }, view)).toBe(true);
  });
});

describe("routing in folded views", () => {
  for (const [view, open] of [
    ["unrolled", []],
    ["unrolled", ["t", "head"]],
    ["unrolled", ["t", "t.h.0×3", "head"]],
    ["rolled", ["t", "t.h.0"]],
  ] as const)
    it(`crosses nothing with ${open.join(", ") || "nothing"} open (${view}), every group open too`, () => {
      const some = laidOut(gpt(), [...open], view);
      expect(crossings(some.scene, some.geoms, some.v, some.m)).toEqual([]);
      const all = laidOut(gpt(), allGroups(gpt(), view), view);
      expect(crossings(all.scene, all.geoms, all.v, all.m)).toEqual([]);
    });
});
