import { describe, expect, it } from "vitest";
import type { ActivationResult, GraphPayload } from "../../js/src/graph/protocol";
import { DISCONNECTED_CLASS, isDisconnected, needsKernel, notebookLink } from "../../js/src/kernel/kernelLink";
import { decodeActivation, RequestClient, RequestError } from "../../js/src/kernel/messages";
import { base64Bytes, type PageViews, readPage, ViewStore, withBuffers } from "../../js/src/kernel/offline";
import { nested } from "./builders";

function result(id: string, dataShape: number[], extra: Partial<ActivationResult> = {}): ActivationResult {
  return {
    id,
    output: 0,
    nOutputs: 1,
    shape: dataShape,
    dtype: "float32",
    plot: dataShape.length === 1 ? "line" : "heatmap",
    dataShape,
    reduced: false,
    note: "",
    stats: { numel: 4, min: 0, max: 1, mean: 0.5, std: 0.1, zeros: 0, nan: 0, inf: 0 },
    hist: { edges: [0, 1], counts: [4] },
    batch: null,
    channels: null,
    dims: [],
    axes: [],
    ...extra,
  };
}

// two views: act_1 (3 values), then x_1 (2x2, batch item 0 of 2)
const META: PageViews = {
  views: [
    { result: result("act_1", [3]), offset: 0, length: 3 },
    { result: result("x_1", [2, 2], { batch: { index: 0, size: 2 } }), offset: 3, length: 4 },
  ],
  total: 5,
  maxBytes: 2_000_000,
  cap: null,
  noWeights: ["a.w"],
};
const VALUES = new Float32Array([1, 2, 3, 10, 11, 12, 13]);

const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));
/** gzip, then base64, as html_export packs a block (with the platform's own CompressionStream). */
async function packed(bytes: Uint8Array): Promise<string> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return base64(new Uint8Array(await new Response(stream).arrayBuffer()));
}
const json = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));

/** A stand-in document holding the page's blocks, as html_export writes them. */
function pageDoc(blocks: Record<string, string>): Document {
  return {
    getElementById: (id: string) => (id in blocks ? { textContent: `\n${blocks[id]}\n` } : null),
  } as unknown as Document;
}

describe("ViewStore", () => {
  const store = new ViewStore(META, VALUES.buffer);

  it("finds a view by id and output and hands its values out as a comm would", () => {
    const v = store.lookup({ id: "x_1" });
    if (typeof v === "string") throw new Error(v);
    const act = decodeActivation(v.result, [store.buffer(v)]);
    expect([...act.values]).toEqual([10, 11, 12, 13]);
  });

  it("says plainly why the page has no view", () => {
    expect(store.lookup({ id: "y_1" })).toBe(
      "activation left out of this page to keep it under 2 MB (max_bytes): 2 of 5 are in it",
    );
    expect(store.lookup({ id: "x_1", batch: 1 })).toBe("this page holds batch item 1 of 2 only");
    expect(store.lookup({ id: "act_1", output: 1 })).toBe("output 1 of this op was left out of this page");
    expect(store.lookup({ id: "a.w" })).toBe(
      "parameter and buffer values are not in this page: write it with weights=True",
    );
  });

  it("gates requests: views in the page go through, the rest never reach the model", () => {
    expect(store.gate({ method: "activation", params: { id: "act_1" } })).toBeNull();
    expect(store.gate({ method: "activation", params: { id: "nope" } })).toMatch(/left out of this page/);
    expect(store.gate({ method: "rerun", params: { id: "act_1" } })).toMatch(/no kernel/);
  });
});

describe("ViewStore answers", () => {
  // two ops; flops values after the views' 7, time has none (the kernel's reason instead)
  const meta: PageViews = {
    ...META,
    answers: { ids: ["op_1", "op_2"], metrics: { flops: 7, time: "no op was timed" }, firstNonfinite: { id: "op_2" } },
  };
  const store = new ViewStore(meta, new Float32Array([...VALUES, 5, 6]).buffer);

  it("answers metrics and the first NaN/Inf as the kernel would, and says why it has no others", () => {
    const flops = store.answer({ method: "metrics", params: { metric: "flops" } });
    if (typeof flops === "string") throw new Error(flops);
    expect(flops.result).toEqual({ metric: "flops", ids: ["op_1", "op_2"] });
    const view = flops.buffers[0];
    expect([view.getFloat32(0, true), view.getFloat32(4, true)]).toEqual([5, 6]);
    expect(store.answer({ method: "metrics", params: { metric: "time" } })).toBe("no op was timed");
    expect(store.gate({ method: "metrics", params: { metric: "relL2" } })).toMatch(/no relL2 values/);
    expect(store.answer({ method: "firstNonfinite", params: {} })).toEqual({ result: { id: "op_2" }, buffers: [] });
  });

  it("a page written before answers existed refuses metrics as before", () => {
    expect(new ViewStore(META, VALUES.buffer).gate({ method: "metrics", params: { metric: "flops" } })).toMatch(
      /no kernel/,
    );
  });
});

describe("readPage", () => {
  const state = { graph: nested(), view: "rolled", selected: "", expanded: ["b"], status: "", blob: null };
  const blocks = async (): Promise<Record<string, string>> => ({
    "lens-state": await packed(json({ state, buffers: [[["blob"], base64(new Uint8Array([1, 2, 3]))]] })),
    "lens-views": await packed(json(META)),
    "lens-values": await packed(new Uint8Array(VALUES.buffer)),
  });

  it("rebuilds the traits (buffers as DataViews) and answers requests through a RequestClient", async () => {
    const { model } = await readPage(pageDoc(await blocks()));
    expect(model.get("view")).toBe("rolled");
    expect((model.get("graph") as GraphPayload).unrolled.nodes.length).toBe(nested().unrolled.nodes.length);
    const blob = (model.get as (k: string) => unknown)("blob") as DataView;
    expect([...new Uint8Array(blob.buffer, blob.byteOffset, blob.byteLength)]).toEqual([1, 2, 3]);

    const client = new RequestClient(model);
    const act = await client.activation({ id: "act_1" }, () => undefined);
    expect([...act.values]).toEqual([1, 2, 3]);
    await expect(client.activation({ id: "y_1" }, () => undefined)).rejects.toThrow(/left out of this page/);
  });

  it("keeps trait changes local and reports them like anywidget", async () => {
    const { model } = await readPage(pageDoc(await blocks()));
    const seen: unknown[] = [];
    model.on("change:selected", () => seen.push(model.get("selected")));
    model.set("selected", "act_1");
    model.set("selected", "act_1"); // unchanged: no event
    model.save_changes();
    expect(seen).toEqual(["act_1"]);
  });

  it("names a missing block", async () => {
    await expect(readPage(pageDoc({}))).rejects.toThrow(/#lens-state/);
  });

  it("puts buffers at nested paths", () => {
    const s = withBuffers({ state: { a: { b: [0, null] } }, buffers: [[["a", "b", 1], "AAE="]] });
    const v = ((s.a as { b: unknown[] }).b[1] as DataView).getUint8(1);
    expect(v).toBe(1);
    expect([...base64Bytes(" AAE= ")]).toEqual([0, 1]);
  });
});

describe("kernel link", () => {
  const el = (classes: string[]): HTMLElement =>
    ({ classList: { contains: (c: string) => classes.includes(c) } }) as unknown as HTMLElement;

  it("reads ipywidgets' disconnected mark and says what needs a kernel", () => {
    expect(isDisconnected(el([DISCONNECTED_CLASS]))).toBe(true);
    expect(isDisconnected(el(["jupyter-widgets"]))).toBe(false);
    expect(needsKernel({ method: "activation" })).toBe("activations need a running kernel: re-run the cell");
    expect(needsKernel({ method: "rerun" })).toBe("re-running the model needs a running kernel: re-run the cell");
    // the inspector's gradient switch asks for an "activation" of value "grad"
    expect(needsKernel({ method: "activation", params: { id: "x", value: "grad" } })).toBe(
      "gradients need a running kernel: re-run the cell",
    );
  });

  it("after a send fails (a restarted kernel, not marked by ipywidgets) says so and sends nothing more", async () => {
    const sent: unknown[] = [];
    const channel = {
      on: () => undefined,
      off: () => undefined,
      send: (m: unknown) => {
        sent.push(m);
        throw new Error("Cannot send");
      },
    };
    const link = notebookLink(el([]));
    const changed: string[] = [];
    link.onChange(() => changed.push(link.status()));
    const client = new RequestClient(channel, link.gate, () => link.lost?.());
    expect(link.status()).toBe("");
    await client.activation({ id: "x" }, () => undefined).catch(() => undefined);
    expect(changed).toEqual(["no kernel: graph only"]);
    const err = await client.request({ method: "metrics", params: { metric: "mean" } }).catch((e: unknown) => e);
    expect((err as RequestError).unavailable).toBe(true);
    expect(sent.length).toBe(1); // refused by the gate, unsent
  });

  it("refuses requests at once, unsent, when the view is disconnected", async () => {
    const sent: unknown[] = [];
    const channel = { on: () => undefined, off: () => undefined, send: (m: unknown) => sent.push(m) };
    const offline = notebookLink(el([DISCONNECTED_CLASS]));
    expect(offline.status()).toBe("no kernel: graph only");
    const client = new RequestClient(channel, offline.gate);
    const err = await client.activation({ id: "x" }, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).unavailable).toBe(true);
    expect((err as RequestError).message).toBe("activations need a running kernel: re-run the cell");
    expect(sent).toEqual([]);

    const live = notebookLink(el([]));
    expect(live.status()).toBe("");
    new RequestClient(channel, live.gate)
      .request({ method: "activation", params: { id: "x" } }, { timeoutMs: 1 })
      .catch(() => undefined);
    expect(sent.length).toBe(1);
  });
});
