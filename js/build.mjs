// Bundles the widget into one self-contained ESM (lens_widget/static/widget.js).
// The layout worker and plotly are bundled first, to text the main bundle turns into Blob URLs:
// the worker runs from one; plotly (gzipped: the whole file travels to the notebook) is
// import()ed from one only after first paint, so its ~1.5 MB is not evaluated while the widget loads.

import { mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outfile = join(root, "lens_widget", "static", "widget.js");
const minify = !process.argv.includes("--dev");

const worker = await esbuild.build({
  entryPoints: [join(root, "js", "src", "layout", "workerEntry.ts")],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify,
  write: false,
  legalComments: "none",
});
const workerCode = worker.outputFiles[0].text;

// An ESM wrapper, so the main bundle can import() it from a Blob URL and get Plotly as default.
const plotly = await esbuild.build({
  stdin: { contents: `export { default } from "plotly.js-cartesian-dist-min";`, resolveDir: root, loader: "js" },
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify,
  write: false,
  define: { "define.amd": "false" },
  legalComments: "none",
});
const plotlyCode = plotly.outputFiles[0].text;
const plotlyGz = gzipSync(plotlyCode, { level: 9 });

// `import code from "lens:<name>"` gives a bundle built above: text, or gzipped bytes
// (a Uint8Array, through esbuild's base64 "binary" loader).
const texts = {
  "layout-worker": { contents: `export default ${JSON.stringify(workerCode)};`, loader: "js" },
  "plotly.js.gz": { contents: plotlyGz, loader: "binary" },
};
const textPlugin = {
  name: "lens-texts",
  setup(build) {
    build.onResolve({ filter: /^lens:/ }, (args) => {
      const name = args.path.slice("lens:".length);
      if (!(name in texts)) return { errors: [{ text: `no bundled text ${args.path}` }] };
      return { path: name, namespace: "lens-text" };
    });
    build.onLoad({ filter: /.*/, namespace: "lens-text" }, (args) => texts[args.path]);
  },
};

mkdirSync(dirname(outfile), { recursive: true });
await esbuild.build({
  entryPoints: [join(root, "js", "src", "index.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify,
  outfile,
  define: { "define.amd": "false" },
  legalComments: "none",
  plugins: [textPlugin],
});
console.log(
  `built ${outfile} (${(statSync(outfile).size / 1024).toFixed(0)} KiB, worker ${(workerCode.length / 1024).toFixed(0)} KiB, plotly ${(plotlyCode.length / 1024).toFixed(0)} KiB, gzipped ${(plotlyGz.length / 1024).toFixed(0)} KiB)`,
);
