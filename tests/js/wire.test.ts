// The graph's wire format, decoded from bytes that lens_widget/widget/wire.py wrote
// (tests/python/wire_fixtures.py makes the fixtures), and TraitSync delivering them.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { GraphPayload, WidgetTraits } from "../../js/src/graph/protocol";
import { type KernelChanges, readGraph, type SyncModel, TraitSync } from "../../js/src/kernel/traitSync";
import { decodeRaw, decodeWire, inflate, WireError } from "../../js/src/kernel/wire";

const fixture = (name: string): Uint8Array =>
  new Uint8Array(readFileSync(new URL(`./fixtures/${name}`, import.meta.url)));
const payloadJson = (): GraphPayload => JSON.parse(new TextDecoder().decode(fixture("wire_payload.json")));
/** A DataView over a copy at an odd offset, as comm buffers may arrive. */
function dataView(bytes: Uint8Array): DataView {
  const raw = new Uint8Array(bytes.length + 3);
  raw.set(bytes, 3);
  return new DataView(raw.buffer, 3, bytes.length);
}

// tests/python/wire_fixtures.py EDGE_VALUE, spelled in TypeScript
const thirdRow: Record<string, unknown> = { id: "é\u2603", n: 2 ** 40, f: -Infinity, opt: null, pair: ["", [1]] };
Object.defineProperty(thirdRow, "__proto__", {
  value: "plain key",
  enumerable: true,
  writable: true,
  configurable: true,
});
const EDGE = {
  rows: [
    { id: "a", n: 1, f: 0.5, opt: null, only: "first", pair: ["w", [3, 4]] },
    { id: "b", n: -70000, f: Infinity, opt: "x", nested: { deep: [true] }, pair: ["b", []] },
    thirdRow,
  ],
  nan: NaN,
  surrogate: "\ud800",
  mixed: [1, "a", null, [2], { k: 1 }],
  big: [2 ** 60, 1],
  bools: Array.from({ length: 20 }, (_, i) => i % 2 === 0),
  ints: Array.from({ length: 25 }, (_, i) => i - 5),
  floats: Array.from({ length: 12 }, (_, i) => 0.1 * i),
  ragged: [[1, 2], [], [3]],
  empty: { list: [], dict: {} },
  none: null,
};

describe("wire decoding", () => {
  it("rebuilds the GraphPayload Python encoded, field for field", async () => {
    const decoded = await decodeWire(dataView(fixture("wire_payload.bin")));
    expect(decoded).toStrictEqual(payloadJson());
  });

  it("carries what JSON cannot or rarely does: NaN, infinities, absent keys, __proto__, lone surrogates", async () => {
    const decoded = (await decodeWire(fixture("wire_edge.bin"))) as typeof EDGE;
    expect(decoded).toStrictEqual(EDGE);
    expect(Object.getPrototypeOf(decoded.rows[2])).toBe(Object.prototype); // the key did not set the prototype
    expect(Object.keys(decoded.rows[0])).toEqual(["id", "n", "f", "opt", "only", "pair"]);
  });

  it("decodes a lone object's lists and objects when first read, once: the view not shown waits", async () => {
    const decoded = (await decodeWire(fixture("wire_payload.bin"))) as GraphPayload;
    expect(Object.getOwnPropertyDescriptor(decoded, "rolled")?.get).toBeTypeOf("function");
    const rolled = decoded.rolled;
    expect(Object.getOwnPropertyDescriptor(decoded, "rolled")?.value).toBe(rolled); // a plain value now
    expect(decoded.rolled).toBe(rolled);
    expect(rolled).toStrictEqual(payloadJson().rolled);
    expect(JSON.parse(JSON.stringify(decoded))).toStrictEqual(payloadJson());
  });

  it("gives consecutive rows with equal lists of plain values one array (no copy per node)", async () => {
    const nodes = ((await decodeWire(fixture("wire_payload.bin"))) as GraphPayload).unrolled.nodes;
    const [bias, conv, flatten, transpose] = nodes.slice(2, 6);
    expect(conv.groups).toBe(bias.groups); // the same enclosing modules
    expect(transpose.groups).toBe(flatten.groups);
    expect(transpose.shape).toBe(flatten.shape);
    expect(flatten.groups).not.toBe(conv.groups);
    expect(flatten.groups).toEqual(["patch_embed:1"]);
    expect(flatten.params).toBe(transpose.params); // empty
    expect(conv.params).not.toBe(flatten.params);
  });

  it("rejects bytes that are not a graph with a clear error", async () => {
    await expect(decodeWire(new Uint8Array([1, 2, 3]))).rejects.toThrow();
    const raw = await inflate(fixture("wire_edge.bin"));
    expect(() => decodeRaw(new TextEncoder().encode("XXXX1234"))).toThrow(WireError);
    expect(() => decodeRaw(raw.subarray(0, raw.length - 8))).toThrow(/runs past the end/);
    const badIndex = withHeader(raw, (root) => (firstColumn(root, "str").d = [9999, 1, 2]));
    expect(() => decodeRaw(badIndex)).toThrow(/string index 9999 out of range/);
    const badLength = withHeader(raw, (root) => (firstColumn(root, "str").d = [0, 1]));
    expect(() => decodeRaw(badLength)).toThrow(/2 values where 3 are needed/);
  });
});

type Col = { c: string; d?: unknown; v?: Col | Col[] };

function firstColumn(col: Col, kind: string): Col {
  if (col.c === kind) return col;
  for (const sub of Array.isArray(col.v) ? col.v : col.v && typeof col.v === "object" ? [col.v] : []) {
    if (sub && typeof sub === "object" && "c" in sub) {
      const found = firstColumn(sub, kind);
      if (found) return found;
    }
  }
  return undefined as unknown as Col;
}

/** Inflated wire bytes with the header's root column edited (the blocks kept, re-aligned). */
function withHeader(raw: Uint8Array, edit: (root: Col) => void): Uint8Array {
  const length = new DataView(raw.buffer, raw.byteOffset).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(raw.subarray(8, 8 + length)));
  edit(header.root);
  const blocks = raw.subarray(8 + length + ((8 - ((8 + length) % 8)) % 8));
  const text = new TextEncoder().encode(JSON.stringify(header));
  const start = 8 + text.length + ((8 - ((8 + text.length) % 8)) % 8);
  const out = new Uint8Array(start + blocks.length);
  out.set(raw.subarray(0, 4));
  new DataView(out.buffer).setUint32(4, text.length, true);
  out.set(text, 8);
  out.set(blocks, start);
  return out;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: as @anywidget/types types its listeners
type Listener = (...args: any[]) => void;

/** anywidget's model as far as TraitSync uses it; a DataView trait changes when it is another DataView. */
class Model implements SyncModel {
  state: Record<string, unknown> = { graph: {}, selected: "", view: "unrolled", expanded: [], status: "" };
  private listeners = new Map<string, Listener[]>();
  get<K extends keyof WidgetTraits>(key: K): WidgetTraits[K] {
    return this.state[key] as WidgetTraits[K];
  }
  set(key: string, value: unknown): void {
    this.state[key] = value;
  }
  save_changes(): void {}
  on(ev: string, cb: Listener): void {
    this.listeners.set(ev, [...(this.listeners.get(ev) ?? []), cb]);
  }
  off(ev?: string | null, cb?: unknown): void {
    if (ev)
      this.listeners.set(
        ev,
        (this.listeners.get(ev) ?? []).filter((f) => f !== cb),
      );
  }
  kernelSetGraph(value: unknown): void {
    this.state.graph = value;
    (this.listeners.get("change:graph") ?? []).forEach((f) => f());
  }
}

function syncOn(model: Model) {
  const got: [GraphPayload | null, boolean][] = [];
  const errors: string[] = [];
  const apply: KernelChanges = {
    graph: (p, initial) => got.push([p, initial]),
    graphError: (m) => errors.push(m),
    view: () => undefined,
    selected: () => undefined,
    expanded: () => undefined,
    status: () => undefined,
  };
  const sync = new TraitSync(model, () => ({ view: "unrolled", selected: "", expanded: new Set() }), apply);
  return { sync, got, errors };
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 50));

describe("TraitSync with wire bytes", () => {
  it("delivers the decoded graph, the first one as the graph the widget opens with", async () => {
    const model = new Model();
    model.state.graph = dataView(fixture("wire_payload.bin"));
    const { sync, got } = syncOn(model);
    await sync.deliverGraph();
    expect(got).toEqual([[payloadJson(), true]]);
    model.kernelSetGraph(dataView(fixture("wire_payload.bin")));
    await settle();
    expect(got.map(([, initial]) => initial)).toEqual([true, false]);
    expect(got[1][0]).toStrictEqual(payloadJson());
  });

  it("hands over only the newest of graphs that arrive while one is decoding", async () => {
    const model = new Model();
    const { sync, got } = syncOn(model);
    const opening = sync.deliverGraph(); // the trait's `{}`: no graph yet
    model.kernelSetGraph(dataView(fixture("wire_edge.bin")));
    model.kernelSetGraph(dataView(fixture("wire_payload.bin")));
    await opening;
    await settle();
    expect(got).toEqual([[payloadJson(), true]]);
  });

  it("delivers nothing after dispose, and reports bytes it cannot read", async () => {
    const model = new Model();
    model.state.graph = dataView(fixture("wire_payload.bin"));
    const closed = syncOn(model);
    const pending = closed.sync.deliverGraph();
    closed.sync.dispose();
    await pending;
    expect(closed.got).toEqual([]);

    const broken = syncOn(model);
    model.kernelSetGraph(new DataView(new Uint8Array([120, 156, 1, 2, 3]).buffer));
    await settle();
    expect(broken.got).toEqual([]);
    expect(broken.errors).toHaveLength(1);
  });

  it("takes a GraphPayload object as it is, and {} as no graph", async () => {
    const p = payloadJson();
    expect(await readGraph(p)).toBe(p);
    expect(await readGraph({})).toBeNull();
    expect(await readGraph(undefined)).toBeNull();
  });
});
