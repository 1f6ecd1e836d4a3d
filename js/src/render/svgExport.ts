// The current view of the graph as an SVG: what is on screen (the canvas's viewport, culled as
// the canvas culls), drawn by the canvas's own passes into an SvgContext, so the picture is
// the same but vector: rects, paths and text, no raster image. Labels the canvas hides when
// zoomed out are drawn, and a zoomed-out view gets a larger size so they read at 100%.
import type { Camera } from "./camera";
import { drawEdges } from "./drawEdges";
import { drawBoxes, drawItems } from "./drawNodes";
import type { Frame, NodeOverlay, Paint } from "./frame";
import type { Renderer } from "./renderer";
import { escapeXml, type MeasureText, num, SvgContext } from "./svgContext";
import type { Theme } from "./theme";

/** Everything the SVG is made from: what the Renderer draws, and how to measure text. */
export interface SvgView {
  frame: Frame;
  cam: Camera;
  width: number; // the viewport, in CSS px
  height: number;
  theme: Theme;
  selected: string | null; // item id
  showShapes: boolean;
  measure: MeasureText;
  title?: string;
  overlay?: NodeOverlay | null; // the metric overlay on screen, if any
}

// The zoom at which labels are drawn at their own size; the SVG is enlarged up to it.
const READABLE_SCALE = 1;
const MAX_SIDE = 16000; // px: the most an enlarged SVG gets on its longer side

/** How much larger than the viewport the SVG's own size is, so labels read at 100%. */
export function enlargement(scale: number, width: number, height: number): number {
  const want = Math.max(1, READABLE_SCALE / scale);
  return Math.max(1, Math.min(want, MAX_SIDE / Math.max(width, height, 1)));
}

/** The SVG document of `v`'s viewport. Pure: the same view gives the same string. */
export function frameToSvg(v: SvgView): string {
  const { cam, width, height } = v;
  const ctx = new SvgContext(v.measure);
  const [vx0, vy0] = [-cam.tx / cam.scale, -cam.ty / cam.scale];
  const [vx1, vy1] = [(width - cam.tx) / cam.scale, (height - cam.ty) / cam.scale];
  const paint: Paint = {
    ctx: ctx as unknown as CanvasRenderingContext2D,
    theme: v.theme,
    frame: v.frame,
    selected: v.selected,
    selectedBox: null, // an export shows the graph, not what is inspected
    hover: null,
    showShapes: v.showShapes,
    labels: true,
    detail: true,
    px: 1 / cam.scale,
    overlay: v.overlay ?? null, // metric colors and NaN marks as on screen
    inView: (r) => r.x <= vx1 && r.x + r.w >= vx0 && r.y <= vy1 && r.y + r.h >= vy0,
  };
  drawBoxes(paint);
  drawEdges(paint);
  drawItems(paint);
  const k = enlargement(cam.scale, width, height);
  const title = v.title ? `<title>${escapeXml(v.title)}</title>` : "";
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${num(width * k)}" height="${num(height * k)}" viewBox="0 0 ${num(width)} ${num(height)}">`,
    title,
    `<defs><clipPath id="lens-viewport"><rect width="${num(width)}" height="${num(height)}"/></clipPath></defs>`,
    `<rect width="${num(width)}" height="${num(height)}" fill="${escapeXml(v.theme.bg)}"/>`,
    `<g clip-path="url(#lens-viewport)"><g transform="matrix(${num4(cam.scale)} 0 0 ${num4(cam.scale)} ${num(cam.tx)} ${num(cam.ty)})">`,
    ...ctx.out,
    "</g></g></svg>",
    "",
  ].join("\n");
}

function num4(n: number): string {
  return String(Math.round(n * 10000) / 10000);
}

/** A text measurer backed by a canvas of its own (the page's fonts, as the canvas draws them). */
export function canvasMeasure(doc: Document): MeasureText {
  const ctx = doc.createElement("canvas").getContext("2d");
  return (text, font) => {
    if (!ctx) return text.length * 0.6 * (Number(/([\d.]+)px/.exec(font)?.[1]) || 10);
    ctx.font = font;
    return ctx.measureText(text).width;
  };
}

/** Offers `svg` as a file download named `name`, through a link placed in `host`. */
export function downloadSvg(svg: string, name: string, host: HTMLElement): void {
  const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
  const a = host.ownerDocument.createElement("a");
  a.href = url;
  a.download = name;
  a.hidden = true;
  host.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** Downloads what renderer `r` shows now as an SVG named after `title`. */
export function downloadViewSvg(r: Renderer, theme: Theme, title: string, root: HTMLElement): void {
  if (!r.frame) return;
  const svg = frameToSvg({
    frame: r.frame,
    cam: r.cam,
    width: r.width,
    height: r.height,
    theme,
    selected: r.selected,
    showShapes: r.showShapes,
    overlay: r.overlay,
    measure: canvasMeasure(root.ownerDocument),
    title,
  });
  downloadSvg(svg, `${title.replace(/[^\w.-]+/g, "_").replace(/_+$/, "")}.svg`, root);
}
