// The widget's styles travel with its element: a <style> inside `el`, which applies in whatever
// tree `el` ends up in. The page (JupyterLab, Notebook 7, VS Code, Colab, a saved page), a
// shadow root (marimo renders each anywidget in one, where styles in the page's <head> never
// apply), or a host that attaches `el` only after render (Voilà: `el.getRootNode()` is `el`
// itself then): the rules are there from the first layout on, with nothing to wait for. They
// leave with the view, too (a cleared output leaves nothing behind in the page).
import { PANEL_LAYOUT_CSS } from "../panel/panelLayout";
import { PANEL_CSS } from "../panel/panelStyles";
import { WIDGET_CSS } from "./styles";

/** Every rule the widget needs, in cascade order (the panel layout overrides the main rules). */
export const ALL_CSS = WIDGET_CSS + PANEL_CSS + PANEL_LAYOUT_CSS;

/** The attribute that marks the widget's style element. */
export const STYLE_ATTR = "data-lens-styles";

/** Puts the widget's rules first inside `el` (once); returns the style element. */
export function scopeStyles(el: HTMLElement): HTMLStyleElement {
  const had = Array.from(el.children).find((c) => c.tagName === "STYLE" && c.hasAttribute(STYLE_ATTR));
  if (had) return had as HTMLStyleElement;
  const style = el.ownerDocument.createElement("style");
  style.setAttribute(STYLE_ATTR, "");
  style.textContent = ALL_CSS;
  el.prepend(style);
  return style;
}
