// The layout worker bundled to a string by js/build.mjs (esbuild plugin).
declare module "lens:layout-worker" {
  const code: string;
  export default code;
}
