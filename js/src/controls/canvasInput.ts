// Pointer and wheel input on the graph canvas: drag pans, the wheel zooms about the pointer,
// hovering marks what a click would hit, and a click (a press that did not drag) is reported.
import { GROUP_PREFIX } from "../model/visibility";
import type { Hit } from "../render/hitTest";
import type { Renderer } from "../render/renderer";

const DRAG_PX = 3; // a press that moves further is a pan, not a click
const ZOOM_PER_WHEEL_PX = 0.0015;
const LINE_PX = 16; // one wheel "line" (deltaMode 1) in pixels

export function bindCanvasInput(canvas: HTMLCanvasElement, renderer: Renderer, onClick: (hit: Hit) => void): void {
  let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
  let dragged = false;
  const local = (ev: MouseEvent): [number, number] => {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  };
  canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    const [x, y] = local(ev);
    down = { x, y, tx: renderer.cam.tx, ty: renderer.cam.ty, id: ev.pointerId };
    dragged = false;
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", (ev) => {
    const [x, y] = local(ev);
    if (down) {
      if (!dragged && Math.hypot(x - down.x, y - down.y) > DRAG_PX) {
        dragged = true;
        canvas.classList.add("lens-dragging");
      }
      if (dragged) {
        renderer.cam = { ...renderer.cam, tx: down.tx + x - down.x, ty: down.ty + y - down.y };
        renderer.request();
      }
      return;
    }
    const hit = renderer.hitTest(x, y);
    const hid = hit?.type === "item" ? hit.id : hit?.type === "header" ? GROUP_PREFIX + hit.box : null;
    canvas.classList.toggle("lens-pointer", hit !== null);
    if (hid !== renderer.hover) {
      renderer.hover = hid;
      canvas.title = hit?.type === "item" ? hit.id.replace(/^@/, "") : hit?.type === "header" ? `${hit.box} (click to collapse)` : "";
      renderer.request();
    }
  });
  canvas.addEventListener("pointerup", (ev) => {
    if (!down || ev.pointerId !== down.id) return;
    canvas.classList.remove("lens-dragging");
    const wasDrag = dragged;
    down = null;
    if (wasDrag) return;
    const [x, y] = local(ev);
    onClick(renderer.hitTest(x, y));
  });
  canvas.addEventListener("pointercancel", () => {
    down = null;
    canvas.classList.remove("lens-dragging");
  });
  canvas.addEventListener("pointerleave", () => {
    if (renderer.hover) {
      renderer.hover = null;
      renderer.request();
    }
  });
  canvas.addEventListener(
    "wheel",
    (ev) => {
      ev.preventDefault();
      const [x, y] = local(ev);
      const dy = ev.deltaMode === 1 ? ev.deltaY * LINE_PX : ev.deltaY;
      renderer.zoomAt(x, y, Math.exp(-dy * ZOOM_PER_WHEEL_PX));
    },
    { passive: false },
  );
}
