// Trait sync with the kernel: typed reads and writes (set + save_changes) of the synced
// traits, and the rules that keep a change from echoing back and forth. The frontend updates
// its own state before it writes, and anywidget reports every write back as a change event;
// so a change event that matches the frontend's state is its own echo and is dropped, and a
// change that came from the kernel is applied without being written back.
import type { GraphPayload, ViewName, WidgetTraits } from "../graph/protocol";
import type { WidgetModel } from "./widgetModel";
import { decodeWire, isWireBytes } from "./wire";

/** Where a change started: a user action here, or the kernel (Python, or another view of the widget). */
export type Origin = "user" | "kernel";

/** The frontend's copy of the traits it writes. */
export interface LocalState {
  readonly view: ViewName;
  readonly selected: string;
  readonly expanded: ReadonlySet<string>;
}

// ---- the rules: pure ----

export function asView(v: unknown): ViewName | null {
  return v === "rolled" || v === "unrolled" ? v : null;
}

export function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** The view to switch to on a kernel `view` change; null for the view shown already (an echo) or a bad value. */
export function kernelViewChange(local: LocalState, view: unknown): ViewName | null {
  const v = asView(view);
  return v !== null && v !== local.view ? v : null;
}

export type SelectedChange = { switchView: ViewName } | { select: string } | null;

/** A kernel `selected` change. A view change may come in the same update: then switch first (the switch picks the kernel's selection up). */
export function kernelSelectedChange(local: LocalState, kernel: { view: unknown; selected: unknown }): SelectedChange {
  if (kernel.view !== local.view) {
    const v = asView(kernel.view);
    return v === null ? null : { switchView: v };
  }
  const id = typeof kernel.selected === "string" ? kernel.selected : "";
  return id === local.selected ? null : { select: id };
}

/** The expanded set to adopt on a kernel `expanded` change; null when the frontend has the same set (order does not matter). */
export function kernelExpandedChange(local: LocalState, expanded: unknown): Set<string> | null {
  const next = new Set(Array.isArray(expanded) ? expanded.filter((a): a is string => typeof a === "string") : []);
  return sameSet(next, local.expanded) ? null : next;
}

/**
 * The selection to make, and whether to write it to the kernel; null: leave the selection as it is.
 * An id the view lacks is cleared when the user asked for it, and ignored when the kernel did
 * (it may not be in this view yet: never echo a cleared selection back). Only user selections are written.
 */
export function resolveSelection(id: string, inView: boolean, origin: Origin): { id: string; write: boolean } | null {
  if (id && !inView) {
    if (origin === "kernel") return null;
    id = "";
  }
  return { id, write: origin === "user" };
}

/**
 * The selection after a switch to another view: the current one carried over (`mapped`), or, when
 * the kernel switched the view, the kernel's own selection if the new view has that node.
 */
export function selectionAfterSwitch(
  mapped: string,
  kernelSelected: string,
  kernelInView: boolean,
  origin: Origin,
): string {
  return origin === "kernel" && kernelSelected && kernelInView ? kernelSelected : mapped;
}

/** The graph a `graph` trait value holds: wire.py's bytes decoded, or a GraphPayload object as it is; null for none (`{}`). */
export async function readGraph(value: unknown): Promise<GraphPayload | null> {
  const g = isWireBytes(value) ? await decodeWire(value) : value;
  return g && typeof g === "object" && "unrolled" in g ? (g as GraphPayload) : null;
}

// ---- the wiring ----

/** What the frontend does with a kernel change that passed the rules. */
export interface KernelChanges {
  /** `initial`: the first graph handed over, the one the widget opens with. */
  graph(payload: GraphPayload | null, initial: boolean): void;
  graphError(message: string): void;
  view(view: ViewName): void;
  selected(id: string): void;
  expanded(next: Set<string>): void;
  status(text: string): void;
}

export type SyncModel = Pick<WidgetModel, "get" | "set" | "save_changes" | "on" | "off">;

/** The traits the frontend writes (graph and status are the kernel's alone). */
type Written = "view" | "selected" | "expanded";

export class TraitSync {
  private cleanups: (() => void)[] = [];
  private graphSeq = 0; // the newest graph being decoded
  private graphsDelivered = 0;

  constructor(
    private model: SyncModel,
    local: () => LocalState,
    private apply: KernelChanges,
  ) {
    this.listen("graph", () => void this.deliverGraph());
    this.listen("selected", () => {
      const c = kernelSelectedChange(local(), { view: model.get("view"), selected: model.get("selected") });
      if (c && "switchView" in c) apply.view(c.switchView);
      else if (c) apply.selected(c.select);
    });
    this.listen("view", () => {
      const v = kernelViewChange(local(), model.get("view"));
      if (v) apply.view(v);
    });
    this.listen("expanded", () => {
      const next = kernelExpandedChange(local(), model.get("expanded"));
      if (next) apply.expanded(next);
    });
    this.listen("status", () => apply.status(this.status));
  }

  // ---- the kernel's values as the model holds them now ----

  /** The graph, decoded; null while there is none (the kernel's trait starts as `{}`). */
  readGraph(): Promise<GraphPayload | null> {
    return readGraph(this.model.get("graph"));
  }

  /**
   * Decodes the kernel's graph and hands it to `apply.graph`, unless a newer graph arrived
   * (or the view closed) while it was decoding. Called for the graph the widget opens with,
   * then on every change.
   */
  async deliverGraph(): Promise<void> {
    const seq = ++this.graphSeq;
    let payload: GraphPayload | null;
    try {
      payload = await this.readGraph();
    } catch (e) {
      if (seq === this.graphSeq) this.apply.graphError((e as Error).message);
      return;
    }
    if (seq !== this.graphSeq) return;
    performance.mark("lens:graph-decoded"); // the bench splits first paint at this mark
    this.apply.graph(payload, this.graphsDelivered++ === 0);
  }

  get view(): ViewName {
    return asView(this.model.get("view")) ?? "unrolled";
  }

  get selected(): string {
    return this.model.get("selected") ?? "";
  }

  get expanded(): Set<string> {
    return new Set(this.model.get("expanded") ?? []);
  }

  get status(): string {
    return this.model.get("status") ?? "";
  }

  // ---- writes: call after the local state holds the new value, so the echo is dropped ----

  writeView(view: ViewName): void {
    this.write("view", view);
  }

  writeSelected(id: string): void {
    this.write("selected", id);
  }

  /** Sorted, so the kernel's list does not depend on the order modules were opened in. */
  writeExpanded(expanded: ReadonlySet<string>): void {
    this.write("expanded", [...expanded].sort());
  }

  dispose(): void {
    this.cleanups.forEach((f) => f());
    this.cleanups = [];
    this.graphSeq++; // a graph still decoding is not delivered
  }

  private write<K extends Written>(key: K, value: WidgetTraits[K]): void {
    this.model.set(key, value);
    this.model.save_changes();
  }

  private listen(trait: keyof WidgetTraits, fn: () => void): void {
    const ev = `change:${trait}` as const;
    this.model.on(ev, fn);
    this.cleanups.push(() => this.model.off(ev, fn));
  }
}
