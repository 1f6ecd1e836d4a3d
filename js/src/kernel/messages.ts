// Request/response over anywidget custom messages, with our own timeouts (a kernel may
// answer only between cells), and decoding of the float32 buffers that come back. A request
// that runs the model, made while a cell runs, is first told it waits for that cell.

import type {
  AblateRequest,
  ActivationRequest,
  ActivationResult,
  AttentionRequest,
  AttentionResult,
  ModuleDetailsResult,
  OpDetailsResult,
  Request,
  ResponseMessage,
  WaitingMessage,
} from "../graph/protocol";
import { needsKernel } from "./kernelLink";
import type { MessageChannel } from "./widgetModel";

export type BufferLike = DataView | ArrayBuffer | ArrayBufferView;

/** float32 little-endian values of a message buffer, copied when unaligned. */
export function decodeFloat32(buf: BufferLike): Float32Array {
  const view =
    buf instanceof ArrayBuffer
      ? new DataView(buf)
      : new DataView(buf.buffer as ArrayBuffer, buf.byteOffset, buf.byteLength);
  const n = Math.floor(view.byteLength / 4);
  const littleHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  if (littleHost && view.byteOffset % 4 === 0) {
    return new Float32Array(view.buffer, view.byteOffset, n).slice();
  }
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

export interface Activation {
  result: ActivationResult;
  values: Float32Array;
}

export interface AttentionMap {
  result: AttentionResult;
  values: Float32Array;
}

/** The float32 values of a reply's first buffer, checked against its dataShape. */
function decodeValues(what: string, dataShape: number[], buffers: BufferLike[]): Float32Array {
  const values = buffers.length > 0 ? decodeFloat32(buffers[0]) : new Float32Array(0);
  const expected = dataShape.reduce((a, b) => a * b, 1);
  if (values.length !== expected) {
    throw new Error(`${what} buffer holds ${values.length} values, dataShape ${dataShape.join("x")} needs ${expected}`);
  }
  return values;
}

export function decodeActivation(result: ActivationResult, buffers: BufferLike[]): Activation {
  return { result, values: decodeValues("activation", result.dataShape, buffers) };
}

export function decodeAttention(result: AttentionResult, buffers: BufferLike[]): AttentionMap {
  return { result, values: decodeValues("attention", result.dataShape, buffers) };
}

export class RequestError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    // no kernel can answer it (none is running, or this is a saved page): retrying will not help
    readonly unavailable = false,
  ) {
    super(message);
  }
}

/** Why a request cannot be answered here (no kernel, not in the saved page), or null to send it. */
export type RequestGate = (req: Request) => string | null;

export interface RequestOptions {
  timeoutMs?: number;
  slowMs?: number;
  onSlow?: () => void; // no reply yet after slowMs: the kernel is probably busy
  /** The kernel queued it behind the running cell (`reason` says so): it answers when the
   * cell has finished, however long that takes, so the timeout no longer runs. */
  onWaiting?: (reason: string) => void;
}

/** Shown while a request that runs the model waits for the running cell. */
export type OnWaiting = (reason: string) => void;

interface Pending {
  resolve: (v: { result: unknown; buffers: BufferLike[] }) => void;
  reject: (e: Error) => void;
  timers: ReturnType<typeof setTimeout>[];
  onWaiting?: OnWaiting;
}

export class RequestClient {
  private next = 1;
  private pending = new Map<number, Pending>();
  private readonly onMsg = (msg: unknown, buffers?: BufferLike[]): void => {
    this.handle(msg, buffers ?? []);
  };

  constructor(
    private model: MessageChannel,
    private gate: RequestGate = () => null,
    private lost: () => void = () => undefined, // a send failed: no request can reach the kernel
  ) {
    model.on("msg:custom", this.onMsg);
  }

  request(req: Request, opts: RequestOptions = {}): Promise<{ result: unknown; buffers: BufferLike[] }> {
    const why = this.gate(req);
    if (why !== null) return Promise.reject(new RequestError(why, false, true));
    const id = this.next++;
    const timeoutMs = opts.timeoutMs ?? 20000;
    return new Promise((resolve, reject) => {
      const timers: ReturnType<typeof setTimeout>[] = [];
      timers.push(
        setTimeout(() => {
          this.pending.delete(id);
          reject(new RequestError(`no reply from the kernel after ${Math.round(timeoutMs / 1000)} s`, true));
        }, timeoutMs),
      );
      if (opts.onSlow) timers.push(setTimeout(opts.onSlow, opts.slowMs ?? 1000));
      this.pending.set(id, { resolve, reject, timers, onWaiting: opts.onWaiting });
      try {
        this.model.send({ type: "request", id, method: req.method, params: req.params });
      } catch {
        // the comm is gone (the kernel restarted: ipywidgets throws "Cannot send"): this
        // widget can never be answered again, a retry would not help
        for (const t of timers) clearTimeout(t);
        this.pending.delete(id);
        reject(new RequestError(needsKernel(req), false, true));
        this.lost();
      }
    });
  }

  /** A node's activation (see ActivationRequest); `onSlow` fires when the kernel has not answered in a second. */
  activation(params: ActivationRequest["params"], onSlow: () => void): Promise<Activation> {
    return this.request({ method: "activation", params }, { timeoutMs: 20000, slowMs: 1000, onSlow }).then(
      ({ result, buffers }) => decodeActivation(result as ActivationResult, buffers),
    );
  }

  /** One head's attention map of an attention op (see AttentionRequest). */
  attention(params: AttentionRequest["params"], onSlow: () => void): Promise<AttentionMap> {
    return this.request({ method: "attention", params }, { timeoutMs: 20000, slowMs: 1000, onSlow }).then(
      ({ result, buffers }) => decodeAttention(result as AttentionResult, buffers),
    );
  }

  /** The op's whole call, its source statement and numbers (see OpDetailsRequest). */
  opDetails(id: string): Promise<OpDetailsResult> {
    return this.request({ method: "opDetails", params: { id } }, { timeoutMs: 20000 }).then(
      ({ result }) => result as OpDetailsResult,
    );
  }

  /** What the module inspector shows of module `address` (see ModuleDetailsRequest). */
  moduleDetails(address: string): Promise<ModuleDetailsResult> {
    return this.request({ method: "moduleDetails", params: { address } }, { timeoutMs: 20000 }).then(
      ({ result }) => result as ModuleDetailsResult,
    );
  }

  /** Re-traces the model saving node `id`; the new graph arrives as a trait change.
   * `onWaiting`: the kernel runs it only when the running cell has finished. */
  rerun(id: string, onWaiting?: OnWaiting): Promise<void> {
    return this.request({ method: "rerun", params: { id } }, { timeoutMs: 120000, onWaiting }).then(() => undefined);
  }

  /** Re-traces with an op ablated; the comparison clean vs ablated arrives as a graph change. */
  ablate(params: AblateRequest["params"], onWaiting?: OnWaiting): Promise<void> {
    return this.request({ method: "ablate", params }, { timeoutMs: 120000, onWaiting }).then(() => undefined);
  }

  /** Back from an ablation to the plain trace (a graph change). */
  endAblation(): Promise<void> {
    return this.request({ method: "endAblation", params: {} }, { timeoutMs: 120000 }).then(() => undefined);
  }

  handle(msg: unknown, buffers: BufferLike[]): boolean {
    const head = msg as Partial<Pick<ResponseMessage | WaitingMessage, "type" | "id">> | null;
    if (!head || typeof head.id !== "number") return false;
    const p = this.pending.get(head.id);
    if (!p) return false;
    if (head.type === "waiting") {
      // queued behind a cell that may run for hours: no timeout, the answer will come
      const w = msg as Partial<WaitingMessage>;
      p.timers.forEach(clearTimeout);
      p.timers = [];
      p.onWaiting?.(typeof w.reason === "string" ? w.reason : "waiting for the running cell");
      return true;
    }
    if (head.type !== "response") return false;
    const m = msg as Partial<ResponseMessage>;
    this.pending.delete(head.id);
    p.timers.forEach(clearTimeout);
    if (m.ok) p.resolve({ result: m.result, buffers });
    else p.reject(new RequestError(m.error ?? "request failed", false));
    return true;
  }

  dispose(): void {
    this.model.off("msg:custom", this.onMsg);
    for (const p of this.pending.values()) p.timers.forEach(clearTimeout);
    this.pending.clear();
  }
}
