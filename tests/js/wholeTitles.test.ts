import { describe, expect, it } from "vitest";
import type { Rect } from "../../js/src/layout/scenePlan";
import type { Camera } from "../../js/src/render/camera";
import { isCut, wholeTitles } from "../../js/src/render/wholeTitles";
import { rng, wide } from "./builders";
import { allGroups, laidOut } from "./geometry";

const W = 600;
const H = 400;

/** The titles on screen vertically that cross the view's left or right edge under `cam`. */
function cut(cam: Camera, titles: readonly Rect[], w = W, h = H): Rect[] {
  return titles.filter((r) => {
    const y0 = r.y * cam.scale + cam.ty;
    if (y0 >= h || y0 + r.h * cam.scale <= 0) return false;
    const x0 = r.x * cam.scale + cam.tx;
    return isCut(x0, x0 + r.w * cam.scale, w);
  });
}

const box = (x: number, y: number, w: number, h = 30): Rect => ({ x, y, w, h });
const share = (cam: Camera, r: Rect): number => {
  const x0 = r.x * cam.scale + cam.tx;
  const x1 = x0 + r.w * cam.scale;
  return Math.max(0, Math.min(x1, W) - Math.max(x0, 0)) / (x1 - x0);
};

describe("wholeTitles", () => {
  it("leaves a camera that cuts no title as it is", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const titles = [box(10, 10, 150), box(300, 10, 200), box(-400, 10, 100), box(700, 10, 100)];
    expect(wholeTitles(cam, titles, W, H)).toBe(cam);
  });

  it("nudges a title cut at the left edge whole, by the least shift", () => {
    // "UNetMidBlock2DCrossAttn" read "etMidBlock2DCrossAttn": its box 20 px past the left edge
    const cam = { scale: 1, tx: 0, ty: 0 };
    const titles = [box(-20, 10, 160), box(250, 10, 100)];
    const next = wholeTitles(cam, titles, W, H);
    expect(cut(next, titles)).toEqual([]);
    expect(next.scale).toBe(1);
    expect(next.ty).toBe(0);
    expect(next.tx).toBeGreaterThan(20);
    expect(next.tx).toBeLessThan(40); // brought in, not pushed 140 px the other way
  });

  it("pushes a title that is mostly off the right edge wholly off when that is the least shift", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const titles = [box(580, 10, 160), box(100, 10, 100)];
    const next = wholeTitles(cam, titles, W, H);
    expect(cut(next, titles)).toEqual([]);
    expect(next.tx).toBeGreaterThan(20);
    expect(next.tx).toBeLessThan(30);
  });

  it("ignores titles above or below the view", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    expect(wholeTitles(cam, [box(-20, -100, 160), box(-20, 500, 160)], W, H)).toBe(cam);
  });

  it("never takes what it was placed for out of view", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const keep = box(5, 100, 200);
    // the least shift (-15, the cut one pushed off) is fine; bringing it in would push keep out
    const titles = [keep, box(585, 10, 160)];
    const next = wholeTitles(cam, titles, W, H, keep);
    expect(share(next, keep)).toBe(1);
    expect(cut(next, titles)).toEqual([]);
    // a keep filling the width: no shift clears the cut one without cutting keep, so it zooms out
    const wideKeep = box(3, 100, 590);
    const zoomed = wholeTitles(cam, [wideKeep, box(590, 10, 100)], W, H, wideKeep, 0.6);
    expect(share(zoomed, wideKeep)).toBe(1);
  });

  it("zooms out a little where a row is wider than the view, about what it keeps", () => {
    // three boxes side by side, 620 px in a 598 px view (the UNet's attention row, inspector
    // open): no nudge clears both ends while the middle one stays put
    const cam = { scale: 1, tx: 0, ty: 0 };
    const row = [box(0, 100, 250), box(260, 100, 100), box(370, 100, 250)];
    const next = wholeTitles(cam, row, 598, H, row[1], 0.62);
    expect(cut(next, row, 598)).toEqual([]);
    expect(next.scale).toBeLessThan(1);
    expect(next.scale).toBeGreaterThanOrEqual(0.9);
    const mid = (c: Camera) => (row[1].x + row[1].w / 2) * c.scale + c.tx;
    expect(Math.abs(mid(next) - mid(cam))).toBeLessThan(598 / 3);
  });

  it("does not zoom below the follow zoom, nor out of a zoom already below it", () => {
    const row = [box(0, 100, 300), box(310, 100, 300), box(620, 100, 300)]; // 920 px at 1
    const at = { scale: 0.66, tx: -1, ty: 0 };
    const next = wholeTitles(at, row, 598, H, null, 0.62);
    expect(next.scale).toBeGreaterThanOrEqual(0.62);
    const low = { scale: 0.5, tx: -1, ty: 0 };
    expect(wholeTitles(low, row, 400, H, null, 0.62).scale).toBe(0.5);
  });

  it("over random rows and cameras: never more cut, a nudge at most, keep as shown as before", () => {
    const rand = rng(36);
    let cleared = 0;
    let hadCut = 0;
    for (let t = 0; t < 400; t++) {
      const titles: Rect[] = [];
      for (let row = 0; row < 1 + Math.floor(rand() * 6); row++) {
        let x = -300 + rand() * 100;
        while (x < 1200) {
          const w = 40 + rand() * 220;
          titles.push(box(x, row * 60, w));
          x += w + 10 + rand() * 120;
        }
      }
      const cam = { scale: 0.5 + rand(), tx: -200 + rand() * 400, ty: rand() * 100 };
      const keep = rand() < 0.5 ? titles[Math.floor(rand() * titles.length)] : null;
      const before = cut(cam, titles).length;
      const next = wholeTitles(cam, titles, W, H, keep, 0.62);
      const after = cut(next, titles).length;
      if (before > 0) hadCut++;
      if (before > 0 && after === 0) cleared++;
      expect(after).toBeLessThanOrEqual(before);
      if (before === 0) expect(next).toBe(cam);
      expect(next.scale).toBeGreaterThanOrEqual(Math.min(cam.scale, 0.62));
      expect(next.scale).toBeGreaterThanOrEqual(cam.scale * 0.8 - 1e-9);
      if (next.scale === cam.scale) expect(Math.abs(next.tx - cam.tx)).toBeLessThanOrEqual(W / 3 + 1e-6);
      if (keep) expect(share(next, keep)).toBeGreaterThanOrEqual(share(cam, keep) - 1e-3);
    }
    expect(hadCut).toBeGreaterThan(200);
    // many rows wider than the view cannot be cleared; a good share are, not merely not made worse
    expect(cleared / hadCut).toBeGreaterThan(0.3);
  });

  it("on a laid-out graph whose boxes stand across the left edge, leaves none cut", () => {
    const p = wide(6, 3, 2);
    const { scene } = laidOut(
      p,
      allGroups(p, "unrolled").filter((g) => !g.includes(".")),
    );
    const titles = [...scene.items.values(), ...scene.titles.values()];
    let tried = 0;
    for (const item of scene.items.values()) {
      // the camera that puts this item's left edge 25 px past the canvas's left side
      const cam = { scale: 1, tx: -item.x - 25, ty: 20 - item.y };
      if (cut(cam, titles).length === 0) continue;
      tried++;
      const next = wholeTitles(cam, titles, W, H);
      expect(cut(next, titles)).toEqual([]);
    }
    expect(tried).toBeGreaterThan(3);
  });
});
