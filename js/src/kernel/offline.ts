// The kernel's stand-in in a standalone HTML page (lens_widget/widget/html_export.py): a widget
// model holding the traits saved in the page, answering "activation" requests from the views
// embedded in it (made in Python by the kernel's own tensor_view), and "metrics" and
// "firstNonfinite" from the answers computed with them (page_answers.py). A request the page
// cannot answer is refused by its gate, which says why (left out to fit the page, or needs a
// kernel).
import type {
  ActivationRequest,
  ActivationResult,
  FirstNonfiniteResult,
  MetricName,
  MetricsResult,
  ModuleDetailsResult,
  OpDetailsResult,
  Request,
  WidgetTraits,
} from "../graph/protocol";
import { REQUEST_KINDS } from "../graph/protocol";
import { fmtCount, fmtMegabytes } from "../panel/format";
import type { RequestGate } from "./messages";
import type { WidgetModel } from "./widgetModel";

/** One embedded view: its result, and where its float32 values sit in the values block. */
export interface EmbeddedView {
  result: ActivationResult;
  offset: number; // in values
  length: number;
}

/** What the page answers beside activations (lens_widget/widget/page_answers.py). */
export interface PageAnswers {
  ids: string[]; // the ops, in the order of every metric's values
  metrics: Partial<Record<MetricName, number | string>>; // offset in values, or why there is none
  firstNonfinite: FirstNonfiniteResult | { error: string };
  opDetails?: Record<string, OpDetailsResult>; // the inspector's call of each op
  moduleDetails?: Record<string, ModuleDetailsResult>;
  detailsLeftOut?: string; // why the page holds no calls (too many ops)
}

/** An answer: its result and its binary buffers, or why there is none. */
type Answer = { result: unknown; buffers: DataView[] } | string;

/** The page's "lens-views" block. */
export interface PageViews {
  views: EmbeddedView[];
  total: number; // saved tensor outputs of the trace
  maxBytes: number; // the page's size budget
  cap: number | null; // values per view after pooling, null when none was pooled
  noWeights: string[]; // parameters and buffers written without a view (weights=False)
  answers?: PageAnswers; // absent in pages written before they were
}

/** The page's "lens-state" block: the traits, binary buffers split out as ipywidgets sends them. */
export interface PageState {
  state: Record<string, unknown>;
  buffers: [path: (string | number)[], base64: string][];
}

export function base64Bytes(text: string): Uint8Array {
  const bin = atob(text.trim());
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** A block of the page: base64 of gzipped bytes in a <script type="application/octet-stream">. */
export async function readBlock(doc: Document, id: string): Promise<ArrayBuffer> {
  const el = doc.getElementById(id);
  if (!el) throw new Error(`the page has no #${id} block`);
  const zipped = base64Bytes(el.textContent ?? "");
  const stream = new Blob([zipped as BlobPart]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

/** The traits with their binary buffers put back as DataViews, where ipywidgets puts them. */
export function withBuffers(page: PageState): Record<string, unknown> {
  const state = structuredClone(page.state);
  for (const [path, data] of page.buffers) {
    let obj = state as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) obj = obj[key] as Record<string | number, unknown>;
    const bytes = base64Bytes(data);
    obj[path[path.length - 1]] = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  return state;
}

/** The embedded views by node id and output, and why a request for another is refused. */
export class ViewStore {
  private byKey = new Map<string, EmbeddedView>();
  private ids = new Set<string>();
  private noWeights: Set<string>;

  constructor(
    readonly meta: PageViews,
    private values: ArrayBuffer,
  ) {
    this.noWeights = new Set(meta.noWeights ?? []);
    for (const v of meta.views) {
      this.byKey.set(`${v.result.id}\u0000${v.result.output}`, v);
      this.ids.add(v.result.id);
    }
  }

  get size(): number {
    return this.byKey.size;
  }

  /** The view answering `params`, or why the page has none. */
  lookup(params: ActivationRequest["params"]): EmbeddedView | string {
    const m = this.meta;
    if ((params.value ?? "activation") !== "activation")
      return "gradients are not in this page: show the log in a notebook";
    if (this.noWeights.has(params.id))
      return "parameter and buffer values are not in this page: write it with weights=True";
    if (!this.ids.has(params.id)) {
      return `activation left out of this page to keep it under ${fmtMegabytes(m.maxBytes)} (max_bytes): ${fmtCount(this.size)} of ${fmtCount(m.total)} are in it`;
    }
    const v = this.byKey.get(`${params.id}\u0000${params.output ?? 0}`);
    if (!v) return `output ${params.output ?? 0} of this op was left out of this page`;
    const r = v.result;
    if ((params.batch ?? 0) !== (r.batch?.index ?? 0))
      return `this page holds batch item ${(r.batch?.index ?? 0) + 1} of ${r.batch?.size ?? 1} only`;
    if ((params.channelStart ?? 0) !== (r.channels?.start ?? 0)) {
      const c = r.channels!;
      return `this page holds channels ${c.start}–${c.start + c.count - 1} of ${c.total} only`;
    }
    return v;
  }

  /** The float32 values of `v`, as a comm delivers them. */
  buffer(v: EmbeddedView): DataView {
    return new DataView(this.values, v.offset * 4, v.length * 4);
  }

  /** The page's answer to `req`, as the kernel would give it, or why it has none. */
  answer(req: Request): Answer {
    const answers = this.meta.answers;
    const kind = REQUEST_KINDS[req.method];
    if (kind.runsModel) return "this page has no kernel: re-running the model needs the notebook";
    if (!kind.onPage) return "this page has no kernel to ask";
    if (req.method === "activation") {
      const v = this.lookup(req.params);
      return typeof v === "string" ? v : { result: v.result, buffers: [this.buffer(v)] };
    }
    if (req.method === "metrics" && answers) {
      const where = answers.metrics[req.params.metric];
      if (typeof where === "string") return where;
      if (where === undefined) return `this page holds no ${req.params.metric} values`;
      const result: MetricsResult = { metric: req.params.metric, ids: answers.ids };
      return { result, buffers: [new DataView(this.values, where * 4, answers.ids.length * 4)] };
    }
    if (req.method === "opDetails" && answers) {
      const d = answers.opDetails?.[req.params.id];
      return d ? { result: d, buffers: [] } : (answers.detailsLeftOut ?? "this page holds no call of that op");
    }
    if (req.method === "moduleDetails" && answers) {
      const d = answers.moduleDetails?.[req.params.address];
      return d ? { result: d, buffers: [] } : (answers.detailsLeftOut ?? "this page holds no facts of that module");
    }
    if (req.method === "firstNonfinite" && answers) {
      const first = answers.firstNonfinite;
      return "error" in first ? first.error : { result: first, buffers: [] };
    }
    return "this page has no kernel to ask";
  }

  /** The page's gate: what it holds goes through, anything else is refused with why. */
  readonly gate: RequestGate = (req: Request) => {
    const found = this.answer(req);
    return typeof found === "string" ? found : null;
  };
}

// `any` as @anywidget/types has it: each event passes its own arguments.
// biome-ignore lint/suspicious/noExplicitAny: as @anywidget/types types its listeners
type Listener = (...args: any[]) => void;

/** An anywidget model with no comm: traits kept here, requests answered from a ViewStore. */
export class OfflineModel implements WidgetModel {
  private state: Record<string, unknown>;
  private listeners = new Map<string, Listener[]>();
  readonly widget_manager = {
    get_model: (): Promise<never> => Promise.reject(new Error("a saved page has no widget manager")),
  };

  constructor(
    state: Record<string, unknown>,
    private store: ViewStore,
  ) {
    this.state = { ...state };
  }

  get<K extends keyof WidgetTraits>(key: K): WidgetTraits[K] {
    return this.state[key] as WidgetTraits[K];
  }

  set<K extends keyof WidgetTraits>(key: K, value: WidgetTraits[K]): void {
    const changed = JSON.stringify(this.state[key]) !== JSON.stringify(value);
    this.state[key] = value;
    if (changed) this.emit(`change:${key}`, value);
  }

  save_changes(): void {}

  on(eventName: string, callback: Listener): void {
    this.listeners.set(eventName, [...(this.listeners.get(eventName) ?? []), callback]);
  }

  off(eventName?: string | null, callback?: Listener | null): void {
    if (!eventName) this.listeners.clear();
    else if (!callback) this.listeners.delete(eventName);
    else
      this.listeners.set(
        eventName,
        (this.listeners.get(eventName) ?? []).filter((f) => f !== callback),
      );
  }

  send(content: unknown): void {
    const msg = content as { type?: string; id?: number } & Request;
    if (msg?.type !== "request") return;
    const found = this.store.answer(msg);
    // answered later, as a kernel would be
    setTimeout(() => {
      if (typeof found === "string")
        this.emit("msg:custom", { type: "response", id: msg.id, ok: false, error: found }, []);
      else this.emit("msg:custom", { type: "response", id: msg.id, ok: true, result: found.result }, found.buffers);
    }, 0);
  }

  private emit(eventName: string, ...args: unknown[]): void {
    for (const f of [...(this.listeners.get(eventName) ?? [])]) f(...args);
  }
}

/** The page's model and gate, from its embedded blocks. */
export async function readPage(doc: Document): Promise<{ model: OfflineModel; store: ViewStore }> {
  const text = new TextDecoder();
  const [state, views, values] = await Promise.all(
    ["lens-state", "lens-views", "lens-values"].map((id) => readBlock(doc, id)),
  );
  const store = new ViewStore(JSON.parse(text.decode(views)) as PageViews, values);
  const traits = withBuffers(JSON.parse(text.decode(state)) as PageState);
  return { model: new OfflineModel(traits, store), store };
}
