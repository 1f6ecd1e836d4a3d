// Plotly figures for one activation: the main plot per ActivationResult.plot and a histogram.
// Plotly loads lazily (plotlyLoader.ts): await ensurePlots() before plotting.
import type * as P from "plotly.js";
import type { Activation } from "../kernel/messages";
import type { Theme } from "../render/theme";
import { loadPlotly, plotlyIfLoaded, preloadPlotly, type PlotlyApi } from "./plotlyLoader";

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

function baseLayout(th: Theme, height: number): Record<string, unknown> {
  return {
    height,
    margin: { l: 44, r: 12, t: 8, b: 32 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { size: 10, color: th.text, family: "system-ui, -apple-system, Segoe UI, sans-serif" },
    xaxis: { gridcolor: th.dark ? "#333a42" : "#eef0f3", zerolinecolor: th.dark ? "#4a525c" : "#d5d9de" },
    yaxis: { gridcolor: th.dark ? "#333a42" : "#eef0f3", zerolinecolor: th.dark ? "#4a525c" : "#d5d9de" },
  };
}

/** Diverging colours around zero when the values cross it, sequential otherwise. */
function colorscale(min: number, max: number): { colorscale: string; zmid?: number; } {
  if (min < 0 && max > 0) return { colorscale: "RdBu", zmid: 0 };
  return { colorscale: "Viridis" };
}

function rows(values: Float32Array, r: number, c: number, offset = 0): number[][] {
  const out: number[][] = new Array(r);
  for (let i = 0; i < r; i++) out[i] = Array.from(values.subarray(offset + i * c, offset + (i + 1) * c));
  return out;
}

function finiteRange(values: Float32Array): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return lo <= hi ? [lo, hi] : [0, 0];
}

export function plotMain(div: HTMLElement, act: Activation, th: Theme): void {
  const { result, values } = act;
  const ds = result.dataShape;
  const layout = baseLayout(th, 260);
  const [lo, hi] = finiteRange(values);
  const cs = colorscale(lo, hi);
  switch (result.plot) {
    case "scalar":
    case "line": {
      const trace = {
        type: "scatter",
        mode: values.length > 1 ? "lines" : "markers",
        y: Array.from(values),
        line: { width: 1.2, color: th.selected },
        hovertemplate: "[%{x}] %{y:.4g}<extra></extra>",
      };
      (layout.xaxis as Record<string, unknown>).title = { text: "index", standoff: 4 };
      plotly().react(div, [trace] as P.Data[], { ...layout, height: 220 } as Partial<P.Layout>, CONFIG);
      return;
    }
    case "heatmap":
    case "sequence": {
      const [r, c] = ds;
      const trace = {
        type: "heatmap",
        z: rows(values, r, c),
        ...cs,
        colorbar: { thickness: 10, len: 0.9 },
        hovertemplate: result.plot === "sequence" ? "token %{y}, feature %{x}: %{z:.4g}<extra></extra>" : "[%{y}, %{x}] %{z:.4g}<extra></extra>",
      };
      const h = Math.max(180, Math.min(360, 40 + r * 6));
      const l: Record<string, unknown> = {
        ...baseLayout(th, h),
        yaxis: { autorange: "reversed", title: { text: result.plot === "sequence" ? "token" : "row", standoff: 4 } },
      };
      (l.xaxis as Record<string, unknown>).title = { text: result.plot === "sequence" ? "feature" : "column", standoff: 4 };
      plotly().react(div, [trace] as P.Data[], l as Partial<P.Layout>, CONFIG);
      return;
    }
    case "images": {
      const [ch, h, w] = ds;
      const cols = Math.min(ch, Math.ceil(Math.sqrt(ch)));
      const nrows = Math.ceil(ch / cols);
      const traces: Record<string, unknown>[] = [];
      const l: Record<string, unknown> = {
        ...baseLayout(th, Math.min(520, 30 + nrows * Math.max(56, (320 / cols) * (h / Math.max(1, w))))),
        grid: { rows: nrows, columns: cols, pattern: "independent", xgap: 0.06, ygap: 0.1 },
        margin: { l: 8, r: 40, t: 16, b: 8 },
        annotations: [] as unknown[],
      };
      const start = result.channels?.start ?? 0;
      for (let i = 0; i < ch; i++) {
        const ax = i === 0 ? "" : String(i + 1);
        traces.push({
          type: "heatmap",
          z: rows(values, h, w, i * h * w),
          xaxis: "x" + ax,
          yaxis: "y" + ax,
          zmin: lo,
          zmax: hi,
          ...cs,
          showscale: i === 0,
          colorbar: { thickness: 8, len: 0.9 },
          hovertemplate: `channel ${start + i} [%{y}, %{x}] %{z:.4g}<extra></extra>`,
        });
        l["xaxis" + ax] = { visible: false };
        l["yaxis" + ax] = { visible: false, autorange: "reversed", scaleanchor: "x" + ax };
        (l.annotations as unknown[]).push({
          text: `c${start + i}`,
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
      plotly().react(div, traces as P.Data[], l as Partial<P.Layout>, CONFIG);
      return;
    }
  }
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
    hovertemplate: "%{x:.4g}: %{y}<extra></extra>",
  };
  const l = { ...baseLayout(th, 140), bargap: 0, margin: { l: 44, r: 12, t: 6, b: 24 } };
  plotly().react(div, [trace] as P.Data[], l as Partial<P.Layout>, CONFIG);
}

export function purge(div: HTMLElement): void {
  // nothing was plotted before Plotly loaded
  plotlyIfLoaded()?.purge(div);
}
