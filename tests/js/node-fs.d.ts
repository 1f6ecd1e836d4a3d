// The one Node API the tests use to read fixtures (the project has no @types/node).
declare module "node:fs" {
  export function readFileSync(path: URL | string): Uint8Array;
}
