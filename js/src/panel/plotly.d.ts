// plotly.js-cartesian-dist-min bundled to an ESM and gzipped by js/build.mjs (esbuild plugin);
// js/src/panel/plotlyLoader.ts imports it from a Blob URL. Its API is typed by @types/plotly.js.
declare module "lens:plotly.js.gz" {
  const gzipped: Uint8Array<ArrayBuffer>;
  export default gzipped;
}
