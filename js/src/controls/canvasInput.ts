// Pointer and wheel input on the graph canvas: drag pans, hovering marks what a click would
// hit, and a click (a press that did not drag) is reported. The wheel zooms about the
// pointer only once the graph is engaged (a press on it, or keyboard focus; a press anywhere
// else lets go) or with Ctrl/⌘ (a trackpad pinch sends that too), as map widgets do;
// otherwise it scrolls the notebook and a hint says how to zoom. Engagement is our own flag,
// not DOM focus: notebook hosts move focus to the cell on the same click.
import { GROUP_PREFIX } from "../graph/visibility";
import type { Hit } from "../render/hitTest";
import { hoverText } from "../render/hoverText";
import type { Renderer } from "../render/renderer";

const DRAG_PX = 3; // a press that moves further is a pan, not a click
const ZOOM_PER_WHEEL_PX = 0.0015;
const ZOOM_PER_PINCH_PX = 0.01; // pinches send small deltas: zoom faster per pixel
const MAX_ZOOM_STEP = 0.5; // at most e^0.5 per event (a Ctrl+wheel notch is 100+ px)
const LINE_PX = 16; // one wheel "line" (deltaMode 1) in pixels
const HINT_MS = 1500;
const DOUBLE_MS = 400; // a second click this soon, this near, makes the first a double click
const DOUBLE_PX = 6;

/** The zoom factor of one wheel event. */
export function wheelZoom(deltaY: number, deltaMode: number, ctrlKey: boolean): number {
  const dy = deltaMode === 1 ? deltaY * LINE_PX : deltaMode === 2 ? deltaY * 400 : deltaY;
  // trackpad pinches arrive as ctrl+wheel with fractional, small deltas
  const pinch = ctrlKey && deltaMode === 0 && Math.abs(dy) < 40;
  const step = -dy * (pinch ? ZOOM_PER_PINCH_PX : ZOOM_PER_WHEEL_PX);
  return Math.exp(Math.max(-MAX_ZOOM_STEP, Math.min(MAX_ZOOM_STEP, step)));
}

/** Binds the listeners; returns what removes the one it puts on the document. */
/** What a click on the canvas does: a header closes its module, a collapsed module opens, a node is selected. */
export interface CanvasActions {
  toggleGroup(key: string, expand: boolean): void;
  openDown?(key: string): void; // a double click on a closed module: down to its first block's contents
  select(id: string): void;
  inspectGroup?(key: string): void; // a click on a module also shows it in an open inspector
}

function dispatchClick(hit: Hit, actions: CanvasActions): void {
  if (!hit) return;
  if (hit.type === "header") {
    actions.toggleGroup(hit.box, false);
    return actions.inspectGroup?.(hit.box);
  }
  if (hit.id.startsWith(GROUP_PREFIX)) {
    const key = hit.id.slice(GROUP_PREFIX.length);
    actions.toggleGroup(key, true);
    return actions.inspectGroup?.(key);
  }
  actions.select(hit.id);
}

export function bindCanvasInput(
  canvas: HTMLCanvasElement,
  renderer: Renderer,
  actions: CanvasActions,
  hint?: HTMLElement,
): () => void {
  let engaged = false;
  const engage = (on: boolean): void => {
    engaged = on;
    canvas.parentElement?.classList.toggle("lens-engaged", on);
    if (on && hint) hint.hidden = true;
  };
  const doc = canvas.ownerDocument;
  const letGo = (ev: Event): void => {
    // the path, not the target: from a shadow root (marimo) the document sees only its host
    if (engaged && !ev.composedPath().includes(canvas)) engage(false);
  };
  doc.addEventListener("pointerdown", letGo, true);
  canvas.addEventListener("focus", () => engage(true));
  let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
  let dragged = false;
  const local = (ev: MouseEvent): [number, number] => {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  };
  canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    engage(true);
    canvas.focus({ preventScroll: true });
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
      canvas.title = hoverText(renderer.frame?.model ?? null, hit); // the whole name, never cut
      renderer.request();
    }
  });
  // the module the last click opened, to go on down on a second click there (a double click:
  // the second click must not land on the opened box's header and close it again)
  let opened: { key: string; x: number; y: number; t: number } | null = null;
  canvas.addEventListener("pointerup", (ev) => {
    if (!down || ev.pointerId !== down.id) return;
    canvas.classList.remove("lens-dragging");
    const wasDrag = dragged;
    down = null;
    if (wasDrag) return;
    const [x, y] = local(ev);
    const hit = renderer.hitTest(x, y);
    const again = opened && ev.timeStamp - opened.t < DOUBLE_MS && Math.hypot(x - opened.x, y - opened.y) < DOUBLE_PX;
    // a second click on what the first opened (still closed on screen, or its header, its body,
    // an op in it) goes on down; one on another closed module now there opens that one
    const closedKey =
      hit?.type === "item" && hit.id.startsWith(GROUP_PREFIX) ? hit.id.slice(GROUP_PREFIX.length) : null;
    if (again && opened && actions.openDown && (closedKey === null || closedKey === opened.key)) {
      actions.openDown(opened.key);
      opened = null;
      return;
    }
    opened = closedKey ? { key: closedKey, x, y, t: ev.timeStamp } : null;
    dispatchClick(hit, actions);
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
  let hintTimer: ReturnType<typeof setTimeout> | undefined;
  const showHint = (): void => {
    if (!hint) return;
    hint.hidden = false;
    clearTimeout(hintTimer);
    hintTimer = setTimeout(() => (hint.hidden = true), HINT_MS);
  };
  canvas.addEventListener(
    "wheel",
    (ev) => {
      if (!engaged && !ev.ctrlKey && !ev.metaKey) {
        showHint(); // not ours: the page scrolls
        return;
      }
      ev.preventDefault();
      const [x, y] = local(ev);
      renderer.zoomAt(x, y, wheelZoom(ev.deltaY, ev.deltaMode, ev.ctrlKey));
    },
    { passive: false },
  );
  return () => doc.removeEventListener("pointerdown", letGo, true);
}
