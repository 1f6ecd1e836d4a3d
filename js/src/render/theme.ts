// Colours of the graph, light and dark: they follow the host's theme (JupyterLab, Notebook 7,
// VS Code, or the page's own background) and `watchTheme` reports when the host switches.
import { composedParent } from "./composedTree";

export interface Theme {
  dark: boolean;
  bg: string;
  text: string;
  muted: string;
  edge: string;
  edgeLabel: string;
  node: string;
  nodeStroke: string;
  paramNode: string;
  paramStroke: string;
  input: string;
  inputStroke: string;
  output: string;
  outputStroke: string;
  hasParams: string;
  hasParamsStroke: string;
  internal: string; // fromInput = false
  failed: string;
  failedStroke: string;
  selected: string;
  hover: string;
  group: string[]; // fills of expanded boxes by depth
  groupStroke: string;
  groupHeader: string[];
  collapsed: string;
  collapsedStroke: string;
}

export const LIGHT: Theme = {
  dark: false,
  bg: "#fbfcfd",
  text: "#1f2933",
  muted: "#7b8794",
  edge: "#9aa5b1",
  edgeLabel: "#52606d",
  node: "#ffffff",
  nodeStroke: "#9aa5b1",
  paramNode: "#f5f7fa",
  paramStroke: "#cbd2d9",
  input: "#d3f9d8",
  inputStroke: "#2b8a3e",
  output: "#ffe8cc",
  outputStroke: "#d9480f",
  hasParams: "#edf2ff",
  hasParamsStroke: "#4263eb",
  internal: "#f1f3f5",
  failed: "#ffe3e3",
  failedStroke: "#e03131",
  selected: "#1c7ed6",
  hover: "#74c0fc",
  group: ["rgba(76,110,245,0.035)", "rgba(76,110,245,0.03)", "rgba(76,110,245,0.025)", "rgba(76,110,245,0.02)"],
  groupStroke: "#c5cff5",
  groupHeader: ["rgba(76,110,245,0.11)", "rgba(32,160,170,0.11)", "rgba(120,90,220,0.10)", "rgba(230,140,30,0.11)"],
  collapsed: "#e7f5ff",
  collapsedStroke: "#4dabf7",
};

export const DARK: Theme = {
  dark: true,
  bg: "#1b1e23",
  text: "#e6e9ed",
  muted: "#8b95a1",
  edge: "#66717d",
  edgeLabel: "#a5b0bb",
  node: "#2a2f36",
  nodeStroke: "#66717d",
  paramNode: "#23272d",
  paramStroke: "#4a525c",
  input: "#1e4d2b",
  inputStroke: "#51cf66",
  output: "#5c3412",
  outputStroke: "#ff922b",
  hasParams: "#27305a",
  hasParamsStroke: "#748ffc",
  internal: "#25292e",
  failed: "#5c1f1f",
  failedStroke: "#ff6b6b",
  selected: "#4dabf7",
  hover: "#1c7ed6",
  group: ["rgba(116,143,252,0.06)", "rgba(56,217,169,0.06)", "rgba(255,212,59,0.06)", "rgba(218,119,242,0.06)"],
  groupStroke: "#4c5a8f",
  groupHeader: ["rgba(116,143,252,0.16)", "rgba(56,217,169,0.16)", "rgba(255,212,59,0.14)", "rgba(218,119,242,0.16)"],
  collapsed: "#1d3557",
  collapsedStroke: "#4dabf7",
};

/** What the host page says of its theme: true dark, false light, null nothing. */
export function hostSaysDark(doc: Document): boolean | null {
  const body = doc.body;
  // JupyterLab and Notebook 7
  const jp = body?.dataset?.jpThemeLight;
  if (jp === "false") return true;
  if (jp === "true") return false;
  // VS Code's notebook webviews: a class and data-vscode-theme-kind on <body>
  const kind = body?.dataset?.vscodeThemeKind ?? "";
  const cls = `${kind} ${body?.className ?? ""}`;
  if (/\bvscode-(dark|high-contrast)\b(?!-light)/.test(cls)) return true;
  if (/\bvscode-(light|high-contrast-light)\b/.test(cls)) return false;
  return null;
}

/** Dark when the host says so, else when the element's computed background is dark. */
export function pickTheme(el: HTMLElement): Theme {
  const said = hostSaysDark(el.ownerDocument);
  if (said !== null) return said ? DARK : LIGHT;
  let node: HTMLElement | null = el;
  while (node) {
    const bg = getComputedStyle(node).backgroundColor;
    const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(bg);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
      const lum = 0.2126 * Number(m[1]) + 0.7152 * Number(m[2]) + 0.0722 * Number(m[3]);
      return lum < 110 ? DARK : LIGHT;
    }
    node = composedParent(node) as HTMLElement | null; // through a shadow root (marimo) to its host
  }
  return LIGHT;
}

// What hosts change when their theme switches: attributes of <body> and <html>.
const WATCHED = ["class", "style", "data-jp-theme-light", "data-jp-theme-name", "data-vscode-theme-kind", "data-theme"];

/**
 * Calls `onChange` with the new theme whenever the host's theme changes under a live widget
 * (JupyterLab's theme menu, VS Code's colour theme, the OS scheme). Returns the unsubscribe.
 */
export function watchTheme(el: HTMLElement, onChange: (t: Theme) => void): () => void {
  const doc = el.ownerDocument;
  let current = pickTheme(el);
  let queued = 0;
  const check = (): void => {
    queued = 0;
    const next = pickTheme(el);
    if (next !== current) {
      current = next;
      onChange(next);
    }
  };
  // One check per frame: a theme switch touches several attributes and style sheets at once.
  const soon = (): void => {
    if (!queued) queued = requestAnimationFrame(check);
  };
  const mo = new MutationObserver(soon);
  for (const target of [doc.body, doc.documentElement]) {
    if (target) mo.observe(target, { attributes: true, attributeFilter: WATCHED });
  }
  const media = doc.defaultView?.matchMedia?.("(prefers-color-scheme: dark)");
  media?.addEventListener?.("change", soon);
  return () => {
    mo.disconnect();
    media?.removeEventListener?.("change", soon);
    if (queued) cancelAnimationFrame(queued);
  };
}
