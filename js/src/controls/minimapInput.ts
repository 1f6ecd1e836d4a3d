// Pointer input on the overview: press and drag to move the view. Pressing inside the view's
// frame drags the frame; pressing elsewhere first centres the view there.
import type { Minimap } from "../render/minimap";
import type { Renderer } from "../render/renderer";

export function bindMinimapInput(minimap: Minimap, renderer: Renderer): void {
  const canvas = minimap.canvas;
  let grab: { id: number; dx: number; dy: number } | null = null;
  const world = (ev: PointerEvent): [number, number] | null => {
    const r = canvas.getBoundingClientRect();
    return minimap.worldAt(ev.clientX - r.left, ev.clientY - r.top);
  };
  const viewCentre = (): [number, number] => renderer.toWorld(renderer.width / 2, renderer.height / 2);
  canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    const p = world(ev);
    if (!p) return;
    ev.preventDefault();
    const [x0, y0] = renderer.toWorld(0, 0);
    const [x1, y1] = renderer.toWorld(renderer.width, renderer.height);
    const inFrame = p[0] >= x0 && p[0] <= x1 && p[1] >= y0 && p[1] <= y1;
    const [cx, cy] = viewCentre();
    grab = { id: ev.pointerId, dx: inFrame ? p[0] - cx : 0, dy: inFrame ? p[1] - cy : 0 };
    canvas.setPointerCapture(ev.pointerId);
    if (!inFrame) minimap.centreOn(p[0], p[1]);
  });
  canvas.addEventListener("pointermove", (ev) => {
    if (!grab || ev.pointerId !== grab.id) return;
    const p = world(ev);
    if (p) minimap.centreOn(p[0] - grab.dx, p[1] - grab.dy);
  });
  const release = (ev: PointerEvent): void => {
    if (grab && ev.pointerId === grab.id) grab = null;
  };
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
}
