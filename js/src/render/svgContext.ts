// A stand-in for the canvas's 2D context that writes SVG elements instead of pixels, so the
// SVG export runs the very drawing passes the canvas does (drawNodes.ts, drawEdges.ts) and
// cannot drift from them. It covers the part of CanvasRenderingContext2D those passes use:
// paths (lines, arcs, curves, rounded corners), fills, strokes, dashes, text and alpha.

/** Text width in px for a CSS font ("700 11px monospace"); the SVG has no canvas to ask. */
export type MeasureText = (text: string, font: string) => number;

interface Style {
  fillStyle: string;
  strokeStyle: string;
  lineWidth: number;
  font: string;
  textAlign: CanvasTextAlign;
  textBaseline: CanvasTextBaseline;
  globalAlpha: number;
  dash: number[];
}

const ANCHOR: Record<string, string> = { left: "start", start: "start", center: "middle", right: "end", end: "end" };
const BASELINE: Record<string, string> = {
  middle: "central",
  top: "hanging",
  hanging: "hanging",
  bottom: "text-after-edge",
  ideographic: "ideographic",
  alphabetic: "alphabetic",
};

/** Two decimals are far below a pixel at any zoom the widget allows. */
export function num(n: number): string {
  return String(Math.round(n * 100) / 100);
}

export function escapeXml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]!);
}

/** "600 11px ui-monospace, 'DejaVu Sans Mono'" -> SVG font attributes. */
export function fontAttrs(font: string): string {
  const m = /^\s*(italic\s+)?(?:(normal|bold|\d{3})\s+)?([\d.]+)px\s+(.+)$/.exec(font);
  if (!m) return `font-size="10"`;
  const style = m[1] ? ` font-style="italic"` : "";
  const weight = m[2] && m[2] !== "normal" && m[2] !== "400" ? ` font-weight="${m[2]}"` : "";
  return `font-size="${num(Number(m[3]))}"${weight}${style} font-family="${escapeXml(m[4])}"`;
}

export class SvgContext {
  fillStyle = "#000";
  strokeStyle = "#000";
  lineWidth = 1;
  font = "10px sans-serif";
  textAlign: CanvasTextAlign = "start";
  textBaseline: CanvasTextBaseline = "alphabetic";
  globalAlpha = 1;
  /** The elements drawn so far, in order. */
  readonly out: string[] = [];
  private dash: number[] = [];
  private d: string[] = [];
  private x = 0;
  private y = 0;
  private stack: Style[] = [];

  constructor(private measure: MeasureText) {}

  // ---- state ----

  save(): void {
    const { fillStyle, strokeStyle, lineWidth, font, textAlign, textBaseline, globalAlpha, dash } = this;
    this.stack.push({ fillStyle, strokeStyle, lineWidth, font, textAlign, textBaseline, globalAlpha, dash });
  }

  restore(): void {
    const s = this.stack.pop();
    if (s) Object.assign(this, s);
  }

  setLineDash(segments: number[]): void {
    this.dash = [...segments];
  }

  getLineDash(): number[] {
    return [...this.dash];
  }

  measureText(text: string): { width: number } {
    return { width: this.measure(text, this.font) };
  }

  // ---- paths ----

  beginPath(): void {
    this.d = [];
  }

  moveTo(x: number, y: number): void {
    this.d.push(`M${num(x)} ${num(y)}`);
    [this.x, this.y] = [x, y];
  }

  lineTo(x: number, y: number): void {
    this.d.push(`L${num(x)} ${num(y)}`);
    [this.x, this.y] = [x, y];
  }

  closePath(): void {
    this.d.push("Z");
  }

  bezierCurveTo(c1x: number, c1y: number, c2x: number, c2y: number, x: number, y: number): void {
    this.d.push(`C${[c1x, c1y, c2x, c2y, x, y].map(num).join(" ")}`);
    [this.x, this.y] = [x, y];
  }

  quadraticCurveTo(cx: number, cy: number, x: number, y: number): void {
    this.d.push(`Q${[cx, cy, x, y].map(num).join(" ")}`);
    [this.x, this.y] = [x, y];
  }

  /** The canvas's arcTo: a line towards (x1, y1), then an arc of radius r turning towards (x2, y2). */
  arcTo(x1: number, y1: number, x2: number, y2: number, r: number): void {
    const [x0, y0] = [this.x, this.y];
    const [ax, ay, bx, by] = [x0 - x1, y0 - y1, x2 - x1, y2 - y1];
    const la = Math.hypot(ax, ay);
    const lb = Math.hypot(bx, by);
    const cross = ax * by - ay * bx;
    if (r <= 0 || la === 0 || lb === 0 || Math.abs(cross) < 1e-9) return this.lineTo(x1, y1);
    const angle = Math.acos(Math.max(-1, Math.min(1, (ax * bx + ay * by) / (la * lb))));
    const t = r / Math.tan(angle / 2); // from the corner to where the arc touches each side
    this.lineTo(x1 + (ax / la) * t, y1 + (ay / la) * t);
    const [ex, ey] = [x1 + (bx / lb) * t, y1 + (by / lb) * t];
    // the turn P0 -> P1 -> P2 is clockwise on screen (y down) exactly when cross < 0
    this.d.push(`A${num(r)} ${num(r)} 0 0 ${cross < 0 ? 1 : 0} ${num(ex)} ${num(ey)}`);
    [this.x, this.y] = [ex, ey];
  }

  arc(cx: number, cy: number, r: number, start: number, end: number, ccw = false): void {
    let sweep = ccw ? start - end : end - start;
    if (sweep < 0) sweep += 2 * Math.PI * Math.ceil(-sweep / (2 * Math.PI));
    const full = sweep >= 2 * Math.PI - 1e-9;
    const at = (a: number): [number, number] => [cx + r * Math.cos(a), cy + r * Math.sin(a)];
    const [sx, sy] = at(start);
    if (this.d.length) this.lineTo(sx, sy);
    else this.moveTo(sx, sy);
    const flag = ccw ? 0 : 1;
    if (full) {
      const [mx, my] = at(start + (ccw ? -Math.PI : Math.PI));
      this.d.push(
        `A${num(r)} ${num(r)} 0 1 ${flag} ${num(mx)} ${num(my)}`,
        `A${num(r)} ${num(r)} 0 1 ${flag} ${num(sx)} ${num(sy)}`,
      );
      return;
    }
    const [ex, ey] = at(ccw ? start - sweep : start + sweep);
    this.d.push(`A${num(r)} ${num(r)} 0 ${sweep > Math.PI ? 1 : 0} ${flag} ${num(ex)} ${num(ey)}`);
    [this.x, this.y] = [ex, ey];
  }

  rect(x: number, y: number, w: number, h: number): void {
    this.moveTo(x, y);
    this.d.push(`h${num(w)}v${num(h)}h${num(-w)}Z`);
  }

  roundRect(x: number, y: number, w: number, h: number, radius: number | number[] = 0): void {
    const r = Math.min(Array.isArray(radius) ? (radius[0] ?? 0) : radius, w / 2, h / 2);
    this.moveTo(x + r, y);
    this.arcTo(x + w, y, x + w, y + h, r);
    this.arcTo(x + w, y + h, x, y + h, r);
    this.arcTo(x, y + h, x, y, r);
    this.arcTo(x, y, x + w, y, r);
    this.closePath();
  }

  // ---- painting ----

  fill(): void {
    if (this.d.length) this.emit(`<path d="${this.d.join("")}" fill="${escapeXml(this.fillStyle)}"${this.alpha()}/>`);
  }

  stroke(): void {
    if (this.d.length) this.emit(`<path d="${this.d.join("")}" fill="none"${this.strokeAttrs()}${this.alpha()}/>`);
  }

  fillRect(x: number, y: number, w: number, h: number): void {
    this.emit(
      `<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="${escapeXml(this.fillStyle)}"${this.alpha()}/>`,
    );
  }

  strokeRect(x: number, y: number, w: number, h: number): void {
    this.emit(
      `<rect x="${num(x)}" y="${num(y)}" width="${num(w)}" height="${num(h)}" fill="none"${this.strokeAttrs()}${this.alpha()}/>`,
    );
  }

  fillText(text: string, x: number, y: number): void {
    const anchor = ANCHOR[this.textAlign] ?? "start";
    const baseline = BASELINE[this.textBaseline] ?? "alphabetic";
    this.emit(
      `<text x="${num(x)}" y="${num(y)}" ${fontAttrs(this.font)} fill="${escapeXml(this.fillStyle)}"` +
        `${anchor === "start" ? "" : ` text-anchor="${anchor}"`}${baseline === "alphabetic" ? "" : ` dominant-baseline="${baseline}"`}` +
        `${this.alpha()}>${escapeXml(text)}</text>`,
    );
  }

  private strokeAttrs(): string {
    const dash = this.dash.length ? ` stroke-dasharray="${this.dash.map(num).join(" ")}"` : "";
    return ` stroke="${escapeXml(this.strokeStyle)}" stroke-width="${num(this.lineWidth)}"${dash}`;
  }

  private alpha(): string {
    return this.globalAlpha < 1 ? ` opacity="${num(this.globalAlpha)}"` : "";
  }

  private emit(element: string): void {
    this.out.push(element);
  }
}
