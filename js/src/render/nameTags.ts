// Names drawn on a faint background so they read over the boxes under them: the overview's
// names far out (overviewLabels.ts) and the minimap's (minimapLabels.ts).
import type { Rect } from "../layout/scenePlan";

export interface NameTag extends Rect {
  text: string;
}

/** Draws each tag's text at its rect (in the context's current pixels), `pad` px from its left. */
export function drawNameTags(
  ctx: CanvasRenderingContext2D,
  tags: readonly NameTag[],
  style: { font: string; alpha: number; pad: number },
  colors: { bg: string; text: string },
): void {
  ctx.font = style.font;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  for (const t of tags) {
    ctx.globalAlpha = style.alpha;
    ctx.fillStyle = colors.bg;
    ctx.fillRect(t.x, t.y, t.w, t.h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = colors.text;
    ctx.fillText(t.text, t.x + style.pad, t.y + t.h / 2 + 0.5);
  }
}
