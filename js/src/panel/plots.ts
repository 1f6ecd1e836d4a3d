// Plotly figures for one activation: the main plot per ActivationResult.plot, a histogram,
// and an attention map. Axes say what each dim is (the kernel names them), colours follow
// the theme (replot on a theme switch), signed values get a scale centred at 0.
// Plotly loads lazily (plotlyLoader.ts): await ensurePlots() before plotting.
import type * as P from "plotly.js";
import type { Activation, AttentionMap } from "../kernel/messages";
import type { Theme } from "../render/theme";
import { colorRange, finiteRange, noValueColor } from "./colorScale";
import { PLOT_NUMBER } from "./format";
import { lonePoints, nonFiniteMarks, nonFiniteMask } from "./noValues";
import { fittedTicks, type IndexAxes, indexRange, indexTicks, squareCells } from "./plotAxes";
import { loadPlotly, type PlotlyApi, plotlyIfLoaded, preloadPlotly } from "./plotlyLoader";

/** Resolves once the plot functions below can draw. */
export function ensurePlots(): Promise<void> {
  return loadPlotly().then(() => undefined);
}

/** Loads Plotly in the background (call after first paint). */
export const preloadPlots = preloadPlotly;

function plotly(): PlotlyApi {
  const p = plotlyIfLoaded();
  if (!p) throw new Error("plotly is not loaded yet: await ensurePlots() first");
  return p;
}

const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false } as const;
type Layout = Record<string, unknown>;

/** An axis in the theme's colours, titled `title` when given. */
function axis(th: Theme, title?: string, extra: Layout = {}): Layout {
  return {
    gridcolor: th.dark ? "#333a42" : "#eef0f3",
    zerolinecolor: th.dark ? "#4a525c" : "#d5d9de",
    linecolor: th.dark ? "#4a525c" : "#d5d9de",
    tickcolor: th.dark ? "#4a525c" : "#d5d9de",
    color: th.text,
    ...(title ? { title: { text: title, standoff: 4 } } : {}),
    ...extra,
  };
}

function baseLayout(th: Theme, height: number, x?: string, y?: string): Layout {
  return {
    height,
    margin: { l: 48, r: 12, t: 8, b: 34 },
    showlegend: false, // the grey marks of NaN/Inf are a second trace, named in a note
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { size: 10, color: th.text, family: "system-ui, -apple-system, Segoe UI, sans-serif" },
    xaxis: axis(th, x),
    yaxis: axis(th, y),
  };
}

function colorbar(th: Theme, thickness: number): Layout {
  return { thickness, len: 0.9, outlinewidth: 0, tickfont: { color: th.text } };
}

function rows(values: Float32Array, r: number, c: number, offset = 0): number[][] {
  const out: number[][] = new Array(r);
  for (let i = 0; i < r; i++) out[i] = Array.from(values.subarray(offset + i * c, offset + (i + 1) * c));
  return out;
}

/** An index axis over `n` cells about `lengthPx` long (fitted again once drawn): the data's
 * extent, integer ticks that do not overlap. */
function cells(n: number, lengthPx: number, across: boolean, fontPx = 10, reversed = false): Layout {
  return { range: indexRange(n, reversed), autorange: false, ...indexTicks(n, lengthPx, across, fontPx) };
}

/** Draws, then spaces the index axes' ticks for the px Plotly gave them (`data-ticks` says
 * "fitted" once they are: the tests wait on it). */
function draw(div: HTMLElement, data: unknown[], l: Layout, axes: IndexAxes): void {
  div.dataset.indexAxes = JSON.stringify(axes);
  delete div.dataset.ticks;
  void Promise.resolve(plotly().react(div, data as P.Data[], l as Partial<P.Layout>, CONFIG) as unknown).then(() =>
    fitTicks(div),
  );
}

/** Re-spaces the ticks of a drawn plot's index axes (after a draw or a resize). */
function fitTicks(div: HTMLElement): void {
  const full = (div as unknown as { _fullLayout?: Record<string, unknown> })._fullLayout;
  const p = plotlyIfLoaded();
  if (!full || !p) return;
  const update = fittedTicks(full, JSON.parse(div.dataset.indexAxes ?? "{}") as IndexAxes);
  const done = (): void => {
    div.dataset.ticks = "fitted";
  };
  if (!Object.keys(update).length) return done();
  void Promise.resolve(p.relayout(div, update as Partial<P.Layout>) as unknown).then(done);
}

/** The plot's px across and up, before Plotly has drawn it (a guess it refits). */
function plotPx(div: HTMLElement, height: number): [number, number] {
  return [Math.max(120, (div.clientWidth || 360) - 60), Math.max(60, height - 42)];
}

/** Ticks at the first column of each group of a flattened (group × rest) axis, "head 0",
 * "head 1"...: a token × head·feature heatmap reads head by head. Null for other axes. */
export function groupTicks(dims: string[], shape: number[]): Layout | null {
  if (dims.length < 2 || dims[0] !== "head" || shape[0] < 2 || shape[0] > 32) return null;
  const per = prod(shape.slice(1));
  const tickvals = Array.from({ length: shape[0] }, (_, i) => i * per);
  return { tickvals, ticktext: tickvals.map((_, i) => `${dims[0]} ${i}`), showgrid: true };
}

/** Positions in the full dim of `n` pooled cells (the centres of their windows). */
function positions(n: number, full: number): number[] {
  const step = full / n;
  return Array.from({ length: n }, (_, i) => (step === 1 ? i : (i + 0.5) * step - 0.5));
}

const prod = (xs: number[]): number => xs.reduce((a, b) => a * b, 1);

/** A grey heatmap over the non-finite cells of one block (Plotly would leave them as gaps,
 * the colour of 0); null when the block is all finite. */
function noValueCells(
  values: Float32Array,
  r: number,
  c: number,
  offset: number,
  th: Theme,
  hover: string,
  extra: Layout = {},
): Layout | null {
  const mask = nonFiniteMask(values, r, c, offset);
  if (!mask) return null;
  const grey = noValueColor(th);
  return {
    type: "heatmap",
    name: "no value",
    z: mask.z,
    text: mask.text,
    colorscale: [
      [0, grey],
      [1, grey],
    ],
    zmin: 0,
    zmax: 1,
    showscale: false,
    hoverongaps: false,
    hovertemplate: `${hover}: %{text}<extra></extra>`,
    ...extra,
  };
}

/** Grey marks for a line's NaN and ±Inf points, on a hidden 0..1 axis over the plot (the
 * line itself just breaks there); null when every point is finite. */
function noValuePoints(values: Float32Array, xs: number[], th: Theme, xName: string): Layout | null {
  const m = nonFiniteMarks(values, xs);
  if (!m.x.length) return null;
  return {
    type: "scatter",
    name: "no value",
    mode: "markers",
    x: m.x,
    y: m.y,
    text: m.text,
    yaxis: "y2",
    marker: { color: noValueColor(th), symbol: m.symbol, size: 8, line: { width: 0 } },
    hovertemplate: `${xName} %{x}: %{text}<extra></extra>`,
  };
}

export function plotMain(div: HTMLElement, act: Activation, th: Theme): void {
  const { result, values } = act;
  const ds = result.dataShape;
  const axes = result.axes;
  const [lo, hi] = finiteRange(values);
  delete div.dataset.gridTitles; // an image grid sets it again
  switch (result.plot) {
    case "scalar":
    case "line": {
      const xs = positions(values.length, Math.max(values.length, prod(result.shape)));
      const lone = values.length > 1 ? lonePoints(values, 5) : null;
      const trace = {
        type: "scatter",
        mode: values.length > 1 ? (lone ? "lines+markers" : "lines") : "markers",
        x: xs,
        y: Array.from(values),
        line: { width: 1.2, color: th.selected },
        marker: { color: th.selected, ...(lone ? { size: lone } : {}) },
        hovertemplate: `${axes[0]} %{x}: %{y:${PLOT_NUMBER}}<extra></extra>`,
      };
      const l = baseLayout(th, 220, axes[0], "value");
      const full = Math.max(values.length, prod(result.shape));
      Object.assign(l.xaxis as Layout, cells(full, plotPx(div, 220)[0], true));
      const marks = noValuePoints(values, xs, th, axes[0]);
      if (marks) l.yaxis2 = { overlaying: "y", range: [0, 1], visible: false, fixedrange: true };
      draw(div, marks ? [trace, marks] : [trace], l, { xaxis: full });
      return;
    }
    case "heatmap":
    case "sequence": {
      const [r, c] = ds;
      const lead = result.plot === "sequence" ? 1 : 0; // a sequence plots one batch item
      const fullRows = result.shape[lead] ?? r;
      const fullCols = prod(result.shape.slice(lead + 1));
      const [yName, xName] = axes;
      const x = positions(c, Math.max(c, fullCols));
      const y = positions(r, Math.max(r, fullRows));
      const trace = {
        type: "heatmap",
        z: rows(values, r, c),
        x,
        y,
        ...colorRange(lo, hi, th),
        colorbar: colorbar(th, 10),
        hoverongaps: false, // the grey cells above say what is there
        hovertemplate: `${yName} %{y}, ${xName} %{x}: %{z:${PLOT_NUMBER}}<extra></extra>`,
      };
      const grey = noValueCells(values, r, c, 0, th, `${yName} %{y}, ${xName} %{x}`, { x, y });
      const height = Math.max(180, Math.min(360, 40 + r * 6));
      const l = baseLayout(th, height, xName, yName);
      const [across, up] = plotPx(div, height);
      const [nx, ny] = [Math.max(c, fullCols), Math.max(r, fullRows)];
      const heads = groupTicks(result.dims.slice(lead + 1), result.shape.slice(lead + 1));
      Object.assign(l.xaxis as Layout, heads ? { range: indexRange(nx), ...heads } : cells(nx, across, true));
      Object.assign(l.yaxis as Layout, cells(ny, up, false, 10, true));
      draw(div, grey ? [trace, grey] : [trace], l, heads ? { yaxis: ny } : { xaxis: nx, yaxis: ny });
      return;
    }
    case "images":
      return plotImages(div, act, th, lo, hi);
  }
}

/** A grid of small heatmaps, one per channel (or head), on one colour scale. */
function plotImages(div: HTMLElement, act: Activation, th: Theme, lo: number, hi: number): void {
  const { result, values } = act;
  const [ch, h, w] = act.result.dataShape;
  const [gridName, yName, xName] = result.axes;
  const cols = Math.min(ch, Math.ceil(Math.sqrt(ch)));
  const nrows = Math.ceil(ch / cols);
  const traces: Layout[] = [];
  // a pooled tile still reads in the tensor's own indices (row 0..255, not 0..63)
  const [fullH, fullW] = [Math.max(h, result.shape[2] ?? h), Math.max(w, result.shape[3] ?? w)];
  const [tileX, tileY] = [positions(w, fullW), positions(h, fullH)];
  const square = squareCells(fullH, fullW);
  const aspect = Math.min(3, Math.max(1 / 3, fullH / fullW)); // a tall tile, not a 64:1 one
  const height = Math.min(560, 60 + nrows * Math.max(56, (320 / cols) * aspect));
  const indexAxes: IndexAxes = {};
  const [across, up] = plotPx(div, height);
  const l: Layout = {
    ...baseLayout(th, height),
    grid: { rows: nrows, columns: cols, pattern: "independent", xgap: 0.1, ygap: 0.16 },
    margin: { l: 8, r: 40, t: 16, b: 8 },
    annotations: [] as unknown[],
  };
  const range = colorRange(lo, hi, th);
  const start = result.channels?.start ?? 0;
  const grid: GridTitles = { name: gridName, start, n: ch, cols };
  div.dataset.gridTitles = JSON.stringify(grid); // resizePlots fits them again
  const titles = gridTitles(grid, div.clientWidth);
  l.margin = { ...TILE_MARGIN, t: titles.caption ? 30 : 16 };
  const greys: Layout[] = [];
  for (let i = 0; i < ch; i++) {
    const ax = i === 0 ? "" : String(i + 1);
    traces.push({
      type: "heatmap",
      z: rows(values, h, w, i * h * w),
      x: tileX,
      y: tileY,
      xaxis: `x${ax}`,
      yaxis: `y${ax}`,
      ...range,
      showscale: i === 0,
      colorbar: colorbar(th, 8),
      hoverongaps: false,
      hovertemplate: `${gridName} ${start + i}, ${yName} %{y}, ${xName} %{x}: %{z:${PLOT_NUMBER}}<extra></extra>`,
    });
    const grey = noValueCells(values, h, w, i * h * w, th, `${gridName} ${start + i}, ${yName} %{y}, ${xName} %{x}`, {
      x: tileX,
      y: tileY,
      xaxis: `x${ax}`,
      yaxis: `y${ax}`,
    });
    if (grey) greys.push(grey); // drawn after every channel: trace i stays channel i
    // every tile has ticks; the left column numbers its rows, the bottom row its columns,
    // and the bottom-left tile names both axes
    const left = i % cols === 0;
    const bottom = i + cols >= ch;
    l[`xaxis${ax}`] = { ...tileAxis(th, bottom, left && bottom ? xName : ""), ...cells(fullW, across / cols, true, 8) };
    l[`yaxis${ax}`] = {
      ...tileAxis(th, left, left && bottom ? yName : ""),
      ...cells(fullH, up / nrows, false, 8, true),
      ...(square ? { scaleanchor: `x${ax}` } : {}),
    };
    indexAxes[`xaxis${ax}`] = fullW;
    indexAxes[`yaxis${ax}`] = fullH;
    (l.annotations as unknown[]).push({
      text: titles.cells[i],
      xref: `x${ax} domain`,
      yref: `y${ax} domain`,
      x: 0,
      y: 1,
      xanchor: "left",
      yanchor: "bottom",
      showarrow: false,
      font: { size: 9, color: th.muted },
    });
  }
  if (titles.caption) (l.annotations as unknown[]).push(captionNote(titles.caption, th.muted));
  draw(div, [...traces, ...greys], l, indexAxes);
}

const TILE_MARGIN = { l: 34, r: 40, t: 16, b: 30 };

/** The axis of one tile of an image grid: ticks on every tile, numbered on the grid's outer
 * edge; squeezed into its domain (never a range padded past the data) when cells are square. */
function tileAxis(th: Theme, labelled: boolean, title: string): Layout {
  return axis(th, title || undefined, {
    showgrid: false,
    zeroline: false,
    ticks: "outside",
    ticklen: 2,
    constrain: "domain",
    showticklabels: labelled,
    tickfont: { size: 8 },
    ...(title ? { title: { text: title, standoff: 2, font: { size: 9 } } } : {}),
  });
}

export function plotHistogram(div: HTMLElement, act: Activation, th: Theme): void {
  const { edges, counts } = act.result.hist;
  const x: number[] = [];
  const width: number[] = [];
  for (let i = 0; i < counts.length; i++) {
    x.push((edges[i] + edges[i + 1]) / 2);
    width.push(edges[i + 1] - edges[i]);
  }
  const trace = {
    type: "bar",
    x,
    y: counts,
    width,
    marker: { color: th.dark ? "#748ffc" : "#5c7cfa", line: { width: 0 } },
    hovertemplate: `%{x:${PLOT_NUMBER}}: %{y}<extra></extra>`,
  };
  // the histogram of the output's values (or of the gradient's): value across, count up
  const l: Layout = { ...baseLayout(th, 150, "value", "count"), bargap: 0, margin: { l: 48, r: 12, t: 6, b: 32 } };
  // the values' own extent, not Plotly's padding around the bars
  if (edges.length > 1 && edges[0] < edges[edges.length - 1])
    Object.assign(l.xaxis as Layout, { range: [edges[0], edges[edges.length - 1]] });
  draw(div, [trace], l, {});
}

/** One head's attention: query tokens down, key tokens across, probabilities from 0. */
export function plotAttention(div: HTMLElement, map: AttentionMap, th: Theme): void {
  const { result, values } = map;
  const [r, c] = result.dataShape;
  const [, hi] = finiteRange(values);
  const trace = {
    type: "heatmap",
    z: rows(values, r, c),
    x: positions(c, Math.max(c, result.keys)),
    y: positions(r, Math.max(r, result.queries)),
    colorscale: "Viridis",
    zmin: 0,
    zmax: hi > 0 ? hi : 1,
    colorbar: colorbar(th, 10),
    hovertemplate: `query token %{y}, key token %{x}: %{z:${PLOT_NUMBER}}<extra></extra>`,
  };
  const side = Math.max(200, Math.min(340, 60 + r * 8));
  const l = baseLayout(th, side, "key token", "query token");
  const [nx, ny] = [Math.max(c, result.keys), Math.max(r, result.queries)];
  const [across, up] = plotPx(div, side);
  Object.assign(l.xaxis as Layout, cells(nx, across, true), { constrain: "domain" });
  Object.assign(l.yaxis as Layout, cells(ny, up, false, 10, true), { constrain: "domain" });
  if (squareCells(ny, nx)) (l.yaxis as Layout).scaleanchor = "x";
  draw(div, [trace], l, { xaxis: nx, yaxis: ny });
}

/** Fits every plot under `container` to its width (Plotly itself follows only the window). */
export function resizePlots(container: HTMLElement): void {
  const p = plotlyIfLoaded();
  if (!p) return;
  for (const div of container.querySelectorAll<HTMLElement>(".js-plotly-plot")) {
    const grid = div.dataset.gridTitles;
    // titles fitted to the width once the plot has taken it: fitted before, the new titles
    // showed at the old cell positions for a moment, whole titles over narrow columns
    // (Plots.resize returns a promise, though its types say void)
    const resized = Promise.resolve(p.Plots.resize(div) as unknown);
    void resized.then(() => {
      if (grid) fitGridTitles(p, div, JSON.parse(grid) as GridTitles);
      fitTicks(div);
    });
  }
}

/** The cells of an image grid: `n` of them from index `start`, `cols` to a row. */
export interface GridTitles {
  name: string;
  start: number;
  n: number;
  cols: number;
}

type Note = Record<string, unknown> & { font?: { color?: string; size?: number } };

/** An image grid's titles refitted to its width now: one per cell, then the caption if any. */
function fitGridTitles(p: PlotlyApi, div: HTMLElement, g: GridTitles): void {
  const { cells, caption } = gridTitles(g, div.clientWidth);
  const shown = ((div as unknown as { layout?: { annotations?: Note[] } }).layout?.annotations ?? []).slice(0, g.n);
  const notes: Note[] = shown.map((a, i) => ({ ...a, text: cells[i] }));
  if (caption) notes.push(captionNote(caption, shown[0]?.font?.color ?? "gray"));
  void p.relayout(div, { annotations: notes, "margin.t": caption ? 30 : TILE_MARGIN.t } as Partial<P.Layout>);
}

/** The dim's name over the grid, when the cells show indices alone. */
function captionNote(text: string, color: string): Note {
  const at = { xref: "paper", yref: "paper", x: 0, y: 1, yshift: 14, xanchor: "left", yanchor: "bottom" };
  return { ...at, showarrow: false, text, font: { size: 10, color } };
}

const TITLE_CHAR_PX = 5.6; // the 9 px titles, per character (a little over, to be safe)

/**
 * The title of each cell: "channel 5" where every title fits its column (`width`: the plot's
 * px, 0 when unknown), else the index alone with the dim's name once over the grid
 * (`caption`, "" when not needed): in a narrow inspector (600 px widgets) whole titles ran
 * into each other.
 */
export function gridTitles(g: GridTitles, width: number): { cells: string[]; caption: string } {
  const whole = Array.from({ length: g.n }, (_, i) => `${g.name} ${g.start + i}`);
  const pitch = (width - 74) / g.cols; // the plot's margins: 34 left, 40 right
  const longest = Math.max(...whole.map((t) => t.length));
  if (!width || longest * TITLE_CHAR_PX <= pitch) return { cells: whole, caption: "" };
  const span = `${g.start}–${g.start + g.n - 1}`; // "channels 0–15", as the channel window says; "dim 1: 0–15"
  return {
    cells: whole.map((_, i) => String(g.start + i)),
    caption: g.name.startsWith("dim ") ? `${g.name}: ${span}` : `${g.name}s ${span}`,
  };
}

export function purge(div: HTMLElement): void {
  delete div.dataset.gridTitles;
  delete div.dataset.indexAxes;
  // nothing was plotted before Plotly loaded
  plotlyIfLoaded()?.purge(div);
}
