import { describe, expect, it } from "vitest";
import { firstCamera, fitCamera, READABLE_SCALE, topCenterX } from "../../js/src/render/camera";

const W = 800;
const H = 600;
const screen = (cam: { scale: number; tx: number; ty: number }, x: number, y: number) => [
  x * cam.scale + cam.tx,
  y * cam.scale + cam.ty,
];

describe("firstCamera", () => {
  it("shows a small graph whole, centred, at no more than 100%", () => {
    const r = { x: 0, y: 0, w: 200, h: 300 };
    const cam = firstCamera(r, W, H);
    expect(cam.scale).toBe(1);
    const [l] = screen(cam, r.x, r.y);
    const [rr] = screen(cam, r.x + r.w, r.y);
    expect(l).toBeCloseTo(W - rr); // centred horizontally
  });

  it("fits a graph that is a little too big, staying readable", () => {
    const r = { x: 0, y: 0, w: 200, h: 600 };
    const cam = firstCamera(r, W, H);
    expect(cam.scale).toBeGreaterThanOrEqual(READABLE_SCALE);
    expect(cam.scale).toBeLessThan(1);
    const [, bottom] = screen(cam, 0, r.h);
    expect(bottom).toBeLessThanOrEqual(H);
  });

  it("opens a tall graph at 100% on its top instead of shrinking it", () => {
    const r = { x: 10, y: 5, w: 300, h: 5000 };
    const cam = firstCamera(r, W, H);
    expect(cam.scale).toBe(1);
    const [left, top] = screen(cam, r.x, r.y);
    expect(top).toBeGreaterThan(0);
    expect(top).toBeLessThan(50);
    expect(left).toBeCloseTo((W - r.w) / 2); // a thin column stays centred
    expect(fitCamera(r, W, H).scale).toBeLessThan(0.2); // what a plain fit would have done
  });

  it("centres a wide graph on its inputs, without empty space beside it", () => {
    const r = { x: 0, y: 0, w: 3000, h: 4000 };
    const cam = firstCamera(r, W, H, 1500);
    expect(screen(cam, 1500, 0)[0]).toBeCloseTo(W / 2);
    const atLeft = firstCamera(r, W, H, 10); // inputs near the left edge: no gap on the left
    expect(screen(atLeft, r.x, 0)[0]).toBeGreaterThan(0);
    expect(screen(atLeft, r.x, 0)[0]).toBeLessThan(50);
    const atRight = firstCamera(r, W, H, 2990);
    expect(screen(atRight, r.x + r.w, 0)[0]).toBeGreaterThan(W - 50);
    expect(screen(atRight, r.x + r.w, 0)[0]).toBeLessThan(W);
  });
});

describe("topCenterX", () => {
  it("is the middle of the topmost row", () => {
    const items = [
      { x: 100, y: 0, w: 50, h: 20 },
      { x: 300, y: 0, w: 50, h: 20 },
      { x: 0, y: 80, w: 1000, h: 20 },
    ];
    expect(topCenterX(items)).toBe(225);
    expect(topCenterX([])).toBeNull();
  });
});
