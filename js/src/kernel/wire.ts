// The `graph` trait arrives as compact bytes (lens_widget/widget/wire.py has the format):
// zlib-compressed columns per key, a string table and little-endian typed arrays. This turns
// them back into the very objects Python encoded, knowing no field names, so what the model
// code reads is a plain GraphPayload (the lists and objects of a lone object, such as the
// rolled view, are decoded when first read). The bytes come from the kernel or a saved
// notebook: every index and length is checked, and a bad one is an error, never a wrong graph.

export type WireBytes = DataView | ArrayBuffer | ArrayBufferView;

const MAGIC = "LWG1";

type Data = number | number[]; // a block index, or the numbers inline
type Column =
  | { c: "str" | "int" | "float" | "bool"; d: Data }
  | { c: "null" }
  | { c: "opt"; m: Data; v: Column }
  | { c: "list"; n: Data; v: Column }
  | { c: "tuple"; v: Column[] }
  | { c: "obj"; k: string[]; v: Column[]; m: (Data | null)[] }
  | { c: "json"; v: unknown[] };

interface Header {
  strings: string[];
  blocks: [string, number, number][]; // dtype, byte offset after the header, count
  root: Column;
}

type Numbers = ArrayLike<number>;

const ARRAYS = {
  u8: Uint8Array,
  u16: Uint16Array,
  u32: Uint32Array,
  i8: Int8Array,
  i16: Int16Array,
  i32: Int32Array,
  f64: Float64Array,
} as const;

export class WireError extends Error {}

function fail(msg: string): never {
  throw new WireError(`graph bytes: ${msg}`);
}

function asBytes(b: WireBytes): Uint8Array {
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  return new Uint8Array(b.buffer as ArrayBuffer, b.byteOffset, b.byteLength);
}

/** True for what wire.py produces, as anywidget hands it over (a DataView of a binary buffer). */
export function isWireBytes(v: unknown): v is WireBytes {
  return v instanceof ArrayBuffer || ArrayBuffer.isView(v);
}

/** zlib-inflates `bytes` with the browser's own DecompressionStream. */
export async function inflate(bytes: WireBytes): Promise<Uint8Array> {
  const src = asBytes(bytes).slice(); // a copy: the model's buffer must not be transferred away
  // written straight into the stream (~20% faster than through a Blob's stream for 4 MB); bad
  // bytes fail the read below, so the writer's own rejections are dropped
  const inflater = new DecompressionStream("deflate");
  const writer = inflater.writable.getWriter();
  writer.write(src).catch(() => {});
  writer.close().catch(() => {});
  return new Uint8Array(await new Response(inflater.readable).arrayBuffer());
}

/** The value wire.py's `encode` was given. */
export async function decodeWire(bytes: WireBytes): Promise<unknown> {
  return decodeRaw(await inflate(bytes));
}

/** Decodes inflated bytes (exported for tests). */
export function decodeRaw(raw: Uint8Array): unknown {
  if (raw.length < 8 || String.fromCharCode(...raw.subarray(0, 4)) !== MAGIC)
    fail("not a lens_widget graph (bad magic)");
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const length = view.getUint32(4, true);
  if (8 + length > raw.length) fail("header runs past the end");
  const header = JSON.parse(new TextDecoder().decode(raw.subarray(8, 8 + length))) as Header;
  if (!Array.isArray(header.strings) || !Array.isArray(header.blocks)) fail("header without strings or blocks");
  const base = 8 + length + ((8 - ((8 + length) % 8)) % 8);
  const reader = new Reader(raw, base, header);
  reader.check(header.root, 1); // every error now, though parts are decoded later (lazy)
  return reader.column(header.root, 1)[0];
}

class Reader {
  constructor(
    private raw: Uint8Array,
    private base: number,
    private header: Header,
  ) {}

  data(ref: Data, n: number): Numbers {
    if (Array.isArray(ref)) {
      if (ref.length !== n) fail(`inline data of ${ref.length} values where ${n} are needed`);
      return ref;
    }
    const block = this.header.blocks[ref];
    if (!block) fail(`no block ${ref}`);
    const [dtype, offset, count] = block;
    const Ctor = ARRAYS[dtype as keyof typeof ARRAYS];
    if (!Ctor) fail(`unknown dtype ${dtype}`);
    if (count !== n) fail(`block ${ref} holds ${count} values where ${n} are needed`);
    const start = this.base + offset;
    const bytes = count * Ctor.BYTES_PER_ELEMENT;
    if (offset < 0 || start + bytes > this.raw.length) fail(`block ${ref} runs past the end`);
    const at = this.raw.byteOffset + start;
    if (at % Ctor.BYTES_PER_ELEMENT === 0 && littleEndianHost)
      return new Ctor(this.raw.buffer as ArrayBuffer, at, count);
    return readSlow(new DataView(this.raw.buffer, at, bytes), dtype as keyof typeof ARRAYS, count);
  }

  /** Fails unless `col` holds `n` values whose every block, length and string index is in range. */
  check(col: Column, n: number): void {
    switch (col.c) {
      case "str": {
        const idx = this.data(col.d, n);
        const size = this.header.strings.length;
        for (let i = 0; i < n; i++) if (!(idx[i] >= 0 && idx[i] < size)) fail(`string index ${idx[i]} out of range`);
        return;
      }
      case "int":
      case "float":
      case "bool":
        this.data(col.d, n);
        return;
      case "null":
        return;
      case "json":
        if (!Array.isArray(col.v) || col.v.length !== n)
          fail(`json column of ${col.v?.length} values where ${n} are needed`);
        return;
      case "opt":
        return this.check(col.v, count(this.data(col.m, n)));
      case "list":
        return this.check(col.v, sum(this.data(col.n, n)));
      case "tuple":
        if (!Array.isArray(col.v)) fail("tuple column without columns");
        return col.v.forEach((c) => this.check(c, n));
      case "obj": {
        const { k: keys, v: subs, m: masks } = col;
        if (
          !Array.isArray(keys) ||
          !Array.isArray(subs) ||
          !Array.isArray(masks) ||
          keys.length !== subs.length ||
          keys.length !== masks.length
        ) {
          fail("object column with mismatched keys");
        }
        subs.forEach((sub, j) => this.check(sub, masks[j] === null ? n : count(this.data(masks[j] as Data, n))));
        return;
      }
      default:
        fail(`unknown column kind ${(col as { c: unknown }).c}`);
    }
  }

  column(col: Column, n: number): unknown[] {
    switch (col.c) {
      case "str": {
        const idx = this.data(col.d, n);
        const strings = this.header.strings;
        const out = new Array<string>(n);
        for (let i = 0; i < n; i++) {
          const s = strings[idx[i]];
          if (typeof s !== "string") fail(`string index ${idx[i]} out of range`);
          out[i] = s;
        }
        return out;
      }
      case "int":
      case "float": {
        const d = this.data(col.d, n);
        const out = new Array<number>(n); // a loop: Array.from of a typed array is ~8x slower
        for (let i = 0; i < n; i++) out[i] = d[i];
        return out;
      }
      case "bool": {
        const d = this.data(col.d, n);
        const out = new Array<boolean>(n);
        for (let i = 0; i < n; i++) out[i] = d[i] !== 0;
        return out;
      }
      case "null":
        return new Array<null>(n).fill(null);
      case "json":
        if (!Array.isArray(col.v) || col.v.length !== n)
          fail(`json column of ${col.v?.length} values where ${n} are needed`);
        return col.v;
      case "opt": {
        const mask = this.data(col.m, n);
        const values = this.column(col.v, count(mask));
        const out = new Array<unknown>(n);
        for (let i = 0, j = 0; i < n; i++) out[i] = mask[i] ? values[j++] : null;
        return out;
      }
      case "list": {
        const lengths = this.data(col.n, n);
        const items = this.column(col.v, sum(lengths));
        // a row whose list equals the row before's (empty, or the same strings or numbers: a
        // node's groups, its shape) gets that same array: decoded lists are read-only
        const flat = FLAT.has(col.v.c);
        const out = new Array<unknown[]>(n);
        let prev: unknown[] | null = null;
        for (let i = 0, pos = 0, at = 0; i < n; i++) {
          const len = lengths[i];
          if (prev !== null && prev.length === len && (len === 0 || (flat && same(items, at, pos, len)))) out[i] = prev;
          else {
            out[i] = prev = items.slice(pos, pos + len);
            at = pos;
          }
          pos += len;
        }
        return out;
      }
      case "tuple": {
        const cols = col.v.map((c) => this.column(c, n));
        const out = new Array<unknown[]>(n);
        for (let i = 0; i < n; i++) out[i] = cols.map((c) => c[i]);
        return out;
      }
      case "obj":
        return this.objects(col, n);
      default:
        return fail(`unknown column kind ${(col as { c: unknown }).c}`);
    }
  }

  private objects(col: Extract<Column, { c: "obj" }>, n: number): Record<string, unknown>[] {
    const { k: keys, v: subs, m: masks } = col;
    if (keys.length !== subs.length || keys.length !== masks.length) fail("object column with mismatched keys");
    const out = new Array<Record<string, unknown>>(n);
    // Each row starts as a copy of one object holding the keys all rows have: objects that get
    // a dozen keys one by one fall back to slow dictionary mode (~1 s for 150k nodes); copies of
    // a parsed template keep one fast shape. JSON.parse of the key names only: no code is built.
    // (the leading keys up to the first one some rows lack, so keys keep their order)
    let lead = 0;
    while (
      lead < keys.length &&
      masks[lead] === null &&
      keys[lead] !== "__proto__" &&
      !(n === 1 && LAZY.has(subs[lead].c))
    )
      lead++;
    const common = keys.slice(0, lead);
    const template = JSON.parse(JSON.stringify(Object.fromEntries(common.map((key) => [key, null])))) as Record<
      string,
      unknown
    >;
    for (let i = 0; i < n; i++) out[i] = { ...template };
    keys.forEach((key, j) => {
      const mask = masks[j] === null ? null : this.data(masks[j] as Data, n);
      if (n === 1 && LAZY.has(subs[j].c)) {
        if (!mask || mask[0]) this.lazy(out[0], key, subs[j]);
        return;
      }
      // "__proto__" is a plain key in JSON; an assignment would set the prototype instead
      if (key === "__proto__") {
        const values = this.column(subs[j], mask ? count(mask) : n);
        for (let i = 0, p = 0; i < n; i++) if (!mask || mask[i]) Object.defineProperty(out[i], key, own(values[p++]));
      } else if (!mask) this.fill(out, key, subs[j], n);
      else {
        const values = this.column(subs[j], count(mask));
        for (let i = 0, p = 0; i < n; i++) if (mask[i]) out[i][key] = values[p++];
      }
    });
    return out;
  }

  /**
   * Sets `key` of every row to its value: strings and numbers straight from their block, so no
   * column-long array is built in between (a 150k-node graph has twenty such columns).
   */
  private fill(rows: Record<string, unknown>[], key: string, col: Column, n: number): void {
    if (col.c === "str") {
      const idx = this.data(col.d, n);
      const strings = this.header.strings;
      for (let i = 0; i < n; i++) rows[i][key] = strings[idx[i]]; // indices checked in check()
    } else if (col.c === "int" || col.c === "float") {
      const d = this.data(col.d, n);
      for (let i = 0; i < n; i++) rows[i][key] = d[i];
    } else if (col.c === "bool") {
      const d = this.data(col.d, n);
      for (let i = 0; i < n; i++) rows[i][key] = d[i] !== 0;
    } else {
      const values = this.column(col, n);
      for (let i = 0; i < n; i++) rows[i][key] = values[i];
    }
  }

  /**
   * `key` of a lone object (the payload, a view) decoded when first read, then a plain value:
   * the view the widget opens with is decoded at once, the other when it is first shown.
   */
  private lazy(target: Record<string, unknown>, key: string, col: Column): void {
    Object.defineProperty(target, key, {
      enumerable: true,
      configurable: true,
      get: () => {
        const value = this.column(col, 1)[0];
        Object.defineProperty(target, key, own(value));
        return value;
      },
      set: (value: unknown) => Object.defineProperty(target, key, own(value)),
    });
  }
}

// Item kinds of a list whose equal lists in consecutive rows share one array.
const FLAT = new Set(["str", "int", "float", "bool"]);

function same(items: unknown[], a: number, b: number, len: number): boolean {
  for (let k = 0; k < len; k++) if (items[a + k] !== items[b + k]) return false;
  return true;
}

// Column kinds of a lone object's members that are decoded on first read (lists and objects).
const LAZY = new Set(["obj", "list", "tuple"]);

function own(value: unknown): PropertyDescriptor {
  return { value, enumerable: true, writable: true, configurable: true };
}

const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function readSlow(view: DataView, dtype: keyof typeof ARRAYS, n: number): number[] {
  const size = ARRAYS[dtype].BYTES_PER_ELEMENT;
  const get: Record<keyof typeof ARRAYS, (o: number) => number> = {
    u8: (o) => view.getUint8(o),
    u16: (o) => view.getUint16(o, true),
    u32: (o) => view.getUint32(o, true),
    i8: (o) => view.getInt8(o),
    i16: (o) => view.getInt16(o, true),
    i32: (o) => view.getInt32(o, true),
    f64: (o) => view.getFloat64(o, true),
  };
  return Array.from({ length: n }, (_, i) => get[dtype](i * size));
}

function sum(a: Numbers): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    if (!(a[i] >= 0)) fail(`negative length ${a[i]}`);
    s += a[i];
  }
  return s;
}

function count(mask: Numbers): number {
  let s = 0;
  for (let i = 0; i < mask.length; i++) if (mask[i]) s++;
  return s;
}
