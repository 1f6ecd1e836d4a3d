import { describe, expect, it } from "vitest";
import { FOLLOW_MIN_SCALE, inView, revealCamera } from "../../js/src/render/camera";
import { CameraTrail } from "../../js/src/render/cameraTrail";

const W = 1000;
const H = 600;

describe("revealCamera", () => {
  it("leaves the camera alone when what opened is in view", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    expect(revealCamera(cam, { x: 100, y: 100, w: 200, h: 200 }, W, H)).toEqual(cam);
  });

  it("pans the least that brings a box hanging below the view into it, keeping the zoom", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const r = { x: 100, y: 400, w: 300, h: 400 };
    const next = revealCamera(cam, r, W, H);
    expect(next.scale).toBe(1);
    expect(next.tx).toBe(0); // nothing to do across
    expect(inView(next, r, W, H)).toBe(true);
    expect(r.y + r.h + next.ty).toBeGreaterThan(H - 40); // its bottom at the bottom: the least pan
  });

  it("zooms out to fit a box too big for the view, but not below a readable zoom", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const fits = { x: 0, y: 0, w: 300, h: 800 }; // fits at ~0.69
    const a = revealCamera(cam, fits, W, H);
    expect(a.scale).toBeLessThan(1);
    expect(a.scale).toBeGreaterThanOrEqual(FOLLOW_MIN_SCALE);
    expect(inView(a, fits, W, H)).toBe(true);
    const tall = { x: 50, y: 30, w: 300, h: 5000 };
    const b = revealCamera(cam, tall, W, H);
    expect(b.scale).toBe(FOLLOW_MIN_SCALE);
    // what does not fit shows its top: the title and the first items
    expect(tall.y * b.scale + b.ty).toBeGreaterThan(0);
    expect(tall.y * b.scale + b.ty).toBeLessThan(40);
  });

  it("never zooms in, and keeps a zoom already below the floor", () => {
    const far = { scale: 0.3, tx: 0, ty: 0 };
    const r = { x: 0, y: 3000, w: 400, h: 400 };
    const next = revealCamera(far, r, W, H);
    expect(next.scale).toBe(0.3);
    expect(inView(next, r, W, H)).toBe(true);
  });

  it("zooms about the point it is given", () => {
    const cam = { scale: 1, tx: 0, ty: 0 };
    const r = { x: 0, y: 0, w: 300, h: 900 };
    const next = revealCamera(cam, r, W, H, 0.5, [150, 0]);
    expect(150 * next.scale + next.tx).toBeCloseTo(150); // the top middle stayed put
    expect(inView(next, r, W, H)).toBe(true);
  });
});

describe("CameraTrail", () => {
  it("returns to the camera from before a module opened, and forgets what opened after it", () => {
    const t = new CameraTrail();
    const first = { scale: 1, tx: 5, ty: 6 };
    t.opened("h", first);
    t.opened("h.0", { scale: 0.8, tx: 0, ty: 0 });
    expect(t.closed("h")).toEqual(first);
    expect(t.closed("h.0")).toBeNull();
    expect(t.closed("h")).toBeNull();
  });

  it("keeps its own copy of the camera", () => {
    const t = new CameraTrail();
    const cam = { scale: 1, tx: 0, ty: 0 };
    t.opened("a", cam);
    cam.tx = 99;
    expect(t.closed("a")?.tx).toBe(0);
  });
});
