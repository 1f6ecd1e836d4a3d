// Colours of the graph, light and dark (follows JupyterLab's theme when there is one).
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

/** Dark when the element's computed background (JupyterLab sets one) is dark. */
export function pickTheme(el: HTMLElement): Theme {
  const body = document.body;
  if (body?.dataset?.jpThemeLight === "false") return DARK;
  if (body?.dataset?.jpThemeLight === "true") return LIGHT;
  let node: HTMLElement | null = el;
  while (node) {
    const bg = getComputedStyle(node).backgroundColor;
    const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(bg);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
      const lum = 0.2126 * Number(m[1]) + 0.7152 * Number(m[2]) + 0.0722 * Number(m[3]);
      return lum < 110 ? DARK : LIGHT;
    }
    node = node.parentElement;
  }
  return LIGHT;
}
