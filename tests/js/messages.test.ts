import { afterEach, describe, expect, it, vi } from "vitest";
import type { ActivationResult } from "../../js/src/graph/protocol";
import { decodeActivation, decodeFloat32, RequestClient, RequestError } from "../../js/src/kernel/messages";
import type { MessageChannel } from "../../js/src/kernel/widgetModel";

function f32Bytes(values: number[], offset: number): DataView {
  const raw = new ArrayBuffer(values.length * 4 + offset);
  const dv = new DataView(raw, offset, values.length * 4);
  values.forEach((v, i) => dv.setFloat32(i * 4, v, true));
  return dv;
}

describe("decodeFloat32", () => {
  it("reads aligned and unaligned DataViews", () => {
    const vals = [1.5, -2, 0, 3.25];
    expect(Array.from(decodeFloat32(f32Bytes(vals, 0)))).toEqual(vals);
    expect(Array.from(decodeFloat32(f32Bytes(vals, 3)))).toEqual(vals);
    expect(Array.from(decodeFloat32(f32Bytes(vals, 8)))).toEqual(vals);
  });

  it("copies, so the message buffer can be released", () => {
    const dv = f32Bytes([1, 2], 0);
    const out = decodeFloat32(dv);
    dv.setFloat32(0, 9, true);
    expect(out[0]).toBe(1);
  });

  it("keeps NaN and Inf", () => {
    const out = decodeFloat32(f32Bytes([NaN, Infinity, -Infinity], 0));
    expect(Number.isNaN(out[0])).toBe(true);
    expect(out[1]).toBe(Infinity);
    expect(out[2]).toBe(-Infinity);
  });
});

const result = (dataShape: number[]): ActivationResult => ({
  id: "x",
  output: 0,
  nOutputs: 1,
  shape: [2, 3],
  dtype: "float32",
  plot: "heatmap",
  dims: ["dim 0", "dim 1"],
  axes: ["dim 0", "dim 1"],
  dataShape,
  reduced: false,
  note: "",
  stats: { numel: 6, min: 0, max: 5, mean: 2.5, std: 1.7, zeros: 1 / 6, nan: 0, inf: 0 },
  hist: { edges: [0, 5], counts: [6] },
  batch: null,
  channels: null,
});

describe("decodeActivation", () => {
  it("checks the buffer against dataShape", () => {
    const act = decodeActivation(result([2, 3]), [f32Bytes([0, 1, 2, 3, 4, 5], 1)]);
    expect(Array.from(act.values)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(() => decodeActivation(result([3, 3]), [f32Bytes([0, 1, 2, 3, 4, 5], 0)])).toThrow(/dataShape/);
  });
});

// biome-ignore lint/suspicious/noExplicitAny: as @anywidget/types types its listeners
type Handler = (...args: any[]) => void;

class FakeModel implements MessageChannel {
  // biome-ignore lint/suspicious/noExplicitAny: the tests read any field of what was sent
  sent: any[] = [];
  handlers: Handler[] = [];
  on(ev: string, cb: Handler): void {
    if (ev === "msg:custom") this.handlers.push(cb);
  }
  off(_ev: string, cb?: Handler): void {
    this.handlers = this.handlers.filter((h) => h !== cb);
  }
  send(content: unknown): void {
    this.sent.push(content);
  }
  reply(msg: unknown, buffers: DataView[] = []): void {
    this.handlers.forEach((h) => h(msg, buffers));
  }
}

describe("RequestClient", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("says a kernel is needed when the comm is gone (send throws after a kernel restart)", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    model.send = () => {
      throw new Error("Cannot send");
    };
    const client = new RequestClient(model);
    const err = await client.activation({ id: "a" }, () => undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).message).toBe("activations need a running kernel: re-run the cell");
    expect((err as RequestError).unavailable).toBe(true); // no Retry: it cannot work
    expect(vi.getTimerCount()).toBe(0); // nothing left to time out
  });

  it("asks for an op's call and a module's facts by their own params", async () => {
    const model = new FakeModel();
    const client = new RequestClient(model);
    const call = client.opDetails("sdpa_1_2");
    const mod = client.moduleDetails("");
    expect(model.sent.map((m) => [m.method, m.params])).toEqual([
      ["opDetails", { id: "sdpa_1_2" }],
      ["moduleDetails", { address: "" }],
    ]);
    model.reply({ type: "response", id: model.sent[0].id, ok: true, result: { id: "sdpa_1_2", arguments: [] } });
    model.reply({ type: "response", id: model.sent[1].id, ok: false, error: "no module '' ran" });
    expect(await call).toMatchObject({ id: "sdpa_1_2", arguments: [] });
    await expect(mod).rejects.toThrow("no module '' ran");
  });

  it("sends requests with ids and resolves on the matching response", async () => {
    const model = new FakeModel();
    const client = new RequestClient(model);
    const p1 = client.request({ method: "activation", params: { id: "a" } });
    const p2 = client.request({ method: "rerun", params: { id: "b" } });
    expect(model.sent.map((m) => [m.type, m.method, m.params.id])).toEqual([
      ["request", "activation", "a"],
      ["request", "rerun", "b"],
    ]);
    const buf = f32Bytes([1], 0);
    model.reply({ type: "response", id: model.sent[1].id, ok: true, result: { ok: true } });
    model.reply({ type: "response", id: model.sent[0].id, ok: true, result: { n: 1 } }, [buf]);
    expect(await p2).toEqual({ result: { ok: true }, buffers: [] });
    const r1 = await p1;
    expect(r1.result).toEqual({ n: 1 });
    expect(r1.buffers[0]).toBe(buf);
  });

  it("rejects with the kernel's error", async () => {
    const model = new FakeModel();
    const client = new RequestClient(model);
    const p = client.request({ method: "activation", params: { id: "a" } });
    model.reply({ type: "response", id: model.sent[0].id, ok: false, error: "KeyError: a" });
    await expect(p).rejects.toThrow("KeyError: a");
  });

  it("reports a slow kernel, then times out", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const client = new RequestClient(model);
    const onSlow = vi.fn();
    const p = client.request({ method: "activation", params: { id: "a" } }, { timeoutMs: 5000, slowMs: 1000, onSlow });
    const caught = p.catch((e: unknown) => e);
    vi.advanceTimersByTime(999);
    expect(onSlow).not.toHaveBeenCalled();
    vi.advanceTimersByTime(2);
    expect(onSlow).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(5000);
    const err = await caught;
    expect(err).toBeInstanceOf(RequestError);
    expect((err as RequestError).timedOut).toBe(true);
    // a late answer is ignored
    expect(client.handle({ type: "response", id: model.sent[0].id, ok: true }, [])).toBe(false);
  });

  it("waits without a timeout once the kernel says the request waits for the running cell", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const client = new RequestClient(model);
    const onWaiting = vi.fn();
    const done = vi.fn();
    const p = client.rerun("b", onWaiting).then(done, (e: unknown) => e);
    const id = model.sent[0].id;
    expect(client.handle({ type: "waiting", id, reason: "waiting for the running cell" }, [])).toBe(true);
    expect(onWaiting).toHaveBeenCalledWith("waiting for the running cell");
    expect(vi.getTimerCount()).toBe(0); // the cell may run far longer than any timeout
    vi.advanceTimersByTime(10 * 120000);
    await Promise.resolve();
    expect(done).not.toHaveBeenCalled();
    // the response comes when the cell has finished
    model.reply({ type: "response", id, ok: true, result: { ok: true } });
    expect(await p).toBeUndefined();
    expect(done).toHaveBeenCalledTimes(1);
  });

  it("without a waiting message a re-run still times out, and stray waiting messages are ignored", async () => {
    vi.useFakeTimers();
    const model = new FakeModel();
    const client = new RequestClient(model);
    const onWaiting = vi.fn();
    const caught = client.rerun("b", onWaiting).catch((e: unknown) => e);
    expect(client.handle({ type: "waiting", id: 99, reason: "x" }, [])).toBe(false);
    vi.advanceTimersByTime(120001);
    const err = await caught;
    expect((err as RequestError).timedOut).toBe(true);
    expect(onWaiting).not.toHaveBeenCalled();
    // a waiting message after the timeout finds nothing pending
    expect(client.handle({ type: "waiting", id: model.sent[0].id, reason: "x" }, [])).toBe(false);
  });

  it("ignores messages that are not its responses", () => {
    const model = new FakeModel();
    const client = new RequestClient(model);
    expect(client.handle({ type: "other" }, [])).toBe(false);
    expect(client.handle({ type: "response", id: 99, ok: true }, [])).toBe(false);
    client.dispose();
    expect(model.handlers).toEqual([]);
  });
});
