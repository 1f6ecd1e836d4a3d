// Plotly is most of the bundle's weight: evaluating it while the widget module loads delayed
// first paint by ~1 s. It is kept gzipped, unzipped by the browser's DecompressionStream and
// import()ed from a Blob URL when the page is idle after first paint, or on first need.
// Nothing is fetched from the network.
import plotlyGz from "lens:plotly.js.gz";
import type * as P from "plotly.js";

export type PlotlyApi = typeof P;

let loaded: PlotlyApi | null = null;
let loading: Promise<PlotlyApi> | null = null;

/** Plotly, if it has finished loading. */
export function plotlyIfLoaded(): PlotlyApi | null {
  return loaded;
}

/** Loads Plotly once; a failed load is retried by the next call. */
export function loadPlotly(): Promise<PlotlyApi> {
  if (!loading) {
    const p = importPlotly().then((m) => {
      performance.mark("lens:plotly-loaded"); // the bench waits for it: evaluating Plotly blocks ~0.5 s
      loaded = m;
      return m;
    });
    p.catch(() => {
      if (loading === p) loading = null;
    });
    loading = p;
  }
  return loading;
}

async function importPlotly(): Promise<PlotlyApi> {
  const unzipped = new Blob([plotlyGz]).stream().pipeThrough(new DecompressionStream("gzip"));
  const code = await new Response(unzipped).arrayBuffer();
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  try {
    return ((await import(/* @vite-ignore */ url)) as { default: PlotlyApi }).default;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** Starts loading Plotly when the main thread is next idle, so it is ready by the first click. */
export function preloadPlotly(): void {
  if (loading) return;
  const start = (): void => void loadPlotly().catch(() => undefined);
  if (typeof requestIdleCallback === "function") requestIdleCallback(start, { timeout: 1000 });
  else setTimeout(start, 0);
}
