// One op's statistics over the steps, as a Plotly figure: per side (activation, gradient) a
// mean ± std band, the exact min/max envelope (dashed), absmax (dotted), red marks where the
// op held NaN/Inf, and a vertical line at the step shown. Plotly loads lazily.
import type * as P from "plotly.js";
import type { MonitorSide } from "../graph/protocol";
import { PLOT_NUMBER } from "../panel/format";
import { loadPlotly } from "../panel/plotlyLoader";
import type { Theme } from "../render/theme";
import { bandOutlines, type SeriesPlotData, type SideSeries, seriesPlotData } from "./monitorLogic";

const CONFIG = { displayModeBar: false, responsive: true, displaylogo: false } as const;
const COLORS: Record<MonitorSide, string> = { activation: "#1c7ed6", gradient: "#e8590c" };

function sideTraces(d: SeriesPlotData, side: MonitorSide, axis: string): Partial<P.PlotData>[] {
  const color = COLORS[side];
  const yaxis = axis === "1" ? "y" : `y${axis}`;
  const line = (y: (number | null)[], name: string, dash: string, width = 1): Partial<P.PlotData> => ({
    type: "scatter",
    mode: "lines",
    x: d.x,
    y,
    name: `${side} ${name}`,
    yaxis,
    line: { color, dash: dash as P.Dash, width },
    hovertemplate: `step %{x}: %{y:${PLOT_NUMBER}}<extra>${side} ${name}</extra>`,
  });
  const band = bandOutlines(d).map(
    (o, i): Partial<P.PlotData> => ({
      type: "scatter",
      mode: "lines",
      x: o.x,
      y: o.y,
      yaxis,
      name: `${side} mean ± std`,
      legendgroup: `${side}-band`,
      showlegend: i === 0,
      fill: "toself",
      fillcolor: `${color}33`,
      line: { width: 0, color },
      hoverinfo: "skip",
    }),
  );
  return [
    ...band,
    line(d.mean, "mean", "solid", 2),
    line(d.min, "min", "dash"),
    line(d.max, "max", "dash"),
    line(d.absmax, "absmax", "dot"),
    {
      type: "scatter",
      mode: "markers",
      x: d.marks.x,
      y: d.marks.y,
      text: d.marks.text,
      name: `${side} NaN/Inf`,
      yaxis,
      marker: { color: "#e03131", symbol: "x", size: 10 },
      hovertemplate: `step %{x}: %{text}<extra>${side}</extra>`,
    },
  ];
}

/** Draws `series` (per side, stacked) into `div`, marking step `shown`. */
export async function plotSeries(
  div: HTMLElement,
  series: ReadonlyMap<MonitorSide, SideSeries>,
  shown: number | null,
  th: Theme,
): Promise<void> {
  const plotly = await loadPlotly();
  const sides = [...series.keys()];
  const traces: Partial<P.PlotData>[] = [];
  const layout: Record<string, unknown> = {
    height: 120 + 110 * sides.length,
    margin: { l: 52, r: 12, t: 8, b: 30 },
    showlegend: true,
    legend: { orientation: "h", font: { size: 9 } },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { size: 10, color: th.text },
    xaxis: { anchor: sides.length > 1 ? "y2" : "y" }, // steps (the legend sits below)
    shapes:
      shown === null
        ? []
        : [
            {
              type: "line",
              xref: "x",
              yref: "paper",
              x0: shown,
              x1: shown,
              y0: 0,
              y1: 1,
              line: { color: th.text, width: 1, dash: "dot" },
            },
          ],
  };
  sides.forEach((side, i) => {
    const axis = String(i + 1);
    traces.push(...sideTraces(seriesPlotData(series.get(side)!), side, axis));
    const h = 1 / sides.length;
    const domain = [1 - (i + 1) * h + (i ? 0 : 0.06), 1 - i * h - (i ? 0.06 : 0)];
    layout[i ? `yaxis${axis}` : "yaxis"] = { title: { text: side }, domain, automargin: true };
  });
  div.dataset.plotted = sides.join(",");
  await plotly.react(div, traces as P.Data[], layout as Partial<P.Layout>, CONFIG);
}
