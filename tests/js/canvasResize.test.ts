import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Frame } from "../../js/src/render/frame";
import { Renderer } from "../../js/src/render/renderer";
import { LIGHT } from "../../js/src/render/theme";

// A canvas without a DOM: the sizes the renderer sets, and a count of frames it asks for.
function fakeCanvas(): HTMLCanvasElement {
  return { width: 0, height: 0, style: {}, getContext: () => ({}) } as unknown as HTMLCanvasElement;
}

describe("Renderer.resize: what a canvas resize keeps on screen", () => {
  let frames = 0;
  beforeEach(() => {
    frames = 0;
    vi.stubGlobal("window", { devicePixelRatio: 1 });
    // counts the frames asked for; never runs them (0: none pending, so each ask counts)
    vi.stubGlobal("requestAnimationFrame", () => {
      frames++;
      return 0;
    });
  });
  afterEach(() => vi.unstubAllGlobals());

  function shown(): Renderer {
    const r = new Renderer(fakeCanvas(), LIGHT);
    r.resize(1200, 600, { now: false });
    r.frame = {} as Frame; // a graph is shown: the camera is kept by the rules below
    r.cam = { scale: 0.7, tx: 100, ty: 50 };
    frames = 0;
    return r;
  }

  it("narrowed for a module's inspector, keeps its left edge: the clicked box stays under the pointer", () => {
    const r = shown();
    expect(r.resize(800, 600, { keep: "left", now: false })).toBe(true);
    expect(r.cam).toEqual({ scale: 0.7, tx: 100, ty: 50 });
    expect([r.width, r.canvas.width, r.canvas.style.width]).toEqual([800, 800, "800px"]);
    expect(frames).toBe(1); // drawn on the next frame, not at once
  });

  it("otherwise keeps the middle of the view in the middle (a panel opening beside an op centred on)", () => {
    const r = shown();
    r.resize(800, 600, { now: false });
    expect(r.cam.tx).toBe(100 - 200);
  });

  it("does nothing for the size it has: a resize observer's echo clears and redraws nothing", () => {
    const r = shown();
    let writes = 0; // setting a real canvas's width, even to the same value, clears it
    Object.defineProperty(r.canvas, "width", {
      get: () => 1200,
      set: () => void writes++,
    });
    expect(r.resize(1200, 600)).toBe(false);
    expect(writes).toBe(0);
    expect(frames).toBe(0);
    expect(r.cam.tx).toBe(100);
  });
});
