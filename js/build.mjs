// Bundles the widget into one self-contained ESM (lens_widget/static/widget.js).
// The layout worker is bundled first, to a string the main bundle turns into a Blob URL.
import * as esbuild from "esbuild";
import { mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outfile = join(root, "lens_widget", "static", "widget.js");
const minify = !process.argv.includes("--dev");

const worker = await esbuild.build({
  entryPoints: [join(root, "js", "src", "layoutWorker.ts")],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify,
  write: false,
  legalComments: "none",
});
const workerCode = worker.outputFiles[0].text;

const workerPlugin = {
  name: "layout-worker",
  setup(build) {
    build.onResolve({ filter: /^lens:layout-worker$/ }, (args) => ({ path: args.path, namespace: "lens-worker" }));
    build.onLoad({ filter: /.*/, namespace: "lens-worker" }, () => ({
      contents: `export default ${JSON.stringify(workerCode)};`,
      loader: "js",
    }));
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
  plugins: [workerPlugin],
});
console.log(`built ${outfile} (${(statSync(outfile).size / 1024).toFixed(0)} KiB, worker ${(workerCode.length / 1024).toFixed(0)} KiB)`);
