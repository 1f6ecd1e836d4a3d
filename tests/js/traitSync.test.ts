import { describe, expect, it } from "vitest";
import type { ViewName, WidgetTraits } from "../../js/src/graph/protocol";
import {
  type KernelChanges,
  kernelExpandedChange,
  kernelSelectedChange,
  kernelViewChange,
  type LocalState,
  resolveSelection,
  type SyncModel,
  selectionAfterSwitch,
  TraitSync,
} from "../../js/src/kernel/traitSync";
import { nested } from "./builders";

const local = (view: ViewName, selected: string, expanded: string[] = []): LocalState => ({
  view,
  selected,
  expanded: new Set(expanded),
});

describe("rules for kernel changes", () => {
  it("drops a selection the frontend has already (its own echo)", () => {
    expect(kernelSelectedChange(local("unrolled", "a"), { view: "unrolled", selected: "a" })).toBeNull();
    expect(kernelSelectedChange(local("unrolled", "a"), { view: "unrolled", selected: "b" })).toEqual({ select: "b" });
    expect(kernelSelectedChange(local("unrolled", "a"), { view: "unrolled", selected: "" })).toEqual({ select: "" });
  });

  it("switches the view first when the kernel's view differs", () => {
    expect(kernelSelectedChange(local("unrolled", "a"), { view: "rolled", selected: "b" })).toEqual({
      switchView: "rolled",
    });
    expect(kernelSelectedChange(local("unrolled", "a"), { view: "sideways", selected: "b" })).toBeNull();
  });

  it("drops a view the frontend shows already, and values that are not views", () => {
    expect(kernelViewChange(local("rolled", ""), "rolled")).toBeNull();
    expect(kernelViewChange(local("rolled", ""), "unrolled")).toBe("unrolled");
    expect(kernelViewChange(local("rolled", ""), 3)).toBeNull();
  });

  it("compares expanded modules as sets", () => {
    expect(kernelExpandedChange(local("unrolled", "", ["a", "b"]), ["b", "a"])).toBeNull();
    expect(kernelExpandedChange(local("unrolled", "", ["a", "b"]), ["b", "a", "a"])).toBeNull();
    expect(kernelExpandedChange(local("unrolled", "", ["a"]), ["a", "b"])).toEqual(new Set(["a", "b"]));
    expect(kernelExpandedChange(local("unrolled", "", ["a"]), null)).toEqual(new Set());
    expect(kernelExpandedChange(local("unrolled", "", []), null)).toBeNull();
  });
});

describe("rules for selections", () => {
  it("writes only what the user selected", () => {
    expect(resolveSelection("a", true, "user")).toEqual({ id: "a", write: true });
    expect(resolveSelection("a", true, "kernel")).toEqual({ id: "a", write: false });
    expect(resolveSelection("", false, "kernel")).toEqual({ id: "", write: false });
  });

  it("ignores a kernel selection this view lacks instead of clearing it (and echoing the clear back)", () => {
    expect(resolveSelection("later", false, "kernel")).toBeNull();
    expect(resolveSelection("nope", false, "user")).toEqual({ id: "", write: true });
  });

  it("after a view switch keeps the kernel's pick only when the kernel switched and the view has it", () => {
    expect(selectionAfterSwitch("layer", "pass:2", true, "kernel")).toBe("pass:2");
    expect(selectionAfterSwitch("layer", "pass:2", false, "kernel")).toBe("layer");
    expect(selectionAfterSwitch("layer", "", false, "kernel")).toBe("layer");
    expect(selectionAfterSwitch("layer", "pass:2", true, "user")).toBe("layer");
  });
});

// biome-ignore lint/suspicious/noExplicitAny: as @anywidget/types types its listeners
type Listener = (...args: any[]) => void;

/** Behaves like anywidget's model: set() stores and fires change events at once, to every listener. */
class BackboneLikeModel implements SyncModel {
  state: WidgetTraits = {
    graph: {} as WidgetTraits["graph"],
    selected: "",
    view: "unrolled",
    expanded: [],
    status: "",
    monitor: null,
    step: -1,
    height: 620,
  };
  sets: [string, unknown][] = [];
  saves = 0;
  private listeners = new Map<string, Listener[]>();

  get<K extends keyof WidgetTraits>(key: K): WidgetTraits[K] {
    return this.state[key];
  }
  set<K extends keyof WidgetTraits>(key: K, value: WidgetTraits[K]): void {
    this.sets.push([key, value]);
    this.store({ [key]: value });
  }
  save_changes(): void {
    this.saves++;
  }
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
  /** A change made by the kernel: all traits stored first, then one event per changed trait. */
  kernelSet(patch: Partial<WidgetTraits>): void {
    this.store(patch);
  }
  get listenerCount(): number {
    let n = 0;
    for (const l of this.listeners.values()) n += l.length;
    return n;
  }
  private store(patch: Partial<WidgetTraits>): void {
    const changed = Object.keys(patch).filter((k) => {
      const key = k as keyof WidgetTraits;
      return JSON.stringify(this.state[key]) !== JSON.stringify(patch[key]);
    });
    this.state = { ...this.state, ...patch };
    for (const k of changed) (this.listeners.get(`change:${k}`) ?? []).slice().forEach((f) => f());
  }
}

/** A frontend as app.ts drives it: state updated first, user actions written, kernel changes applied. */
function frontend(model: BackboneLikeModel) {
  const state = { view: "unrolled" as ViewName, selected: "", expanded: new Set<string>() };
  const applied: [string, unknown][] = [];
  const apply: KernelChanges = {
    graph: (p) => applied.push(["graph", p]),
    graphError: (m) => applied.push(["graphError", m]),
    view: (v) => {
      applied.push(["view", v]);
      state.view = v;
      state.selected = sync.selected; // a kernel switch picks the kernel's selection up
    },
    selected: (id) => {
      applied.push(["selected", id]);
      const next = resolveSelection(id, true, "kernel")!;
      state.selected = next.id;
      if (next.write) sync.writeSelected(next.id);
    },
    expanded: (next) => {
      applied.push(["expanded", [...next]]);
      state.expanded = next;
    },
    status: (text) => applied.push(["status", text]),
  };
  const sync = new TraitSync(model, () => state, apply);
  const userSelects = (id: string): void => {
    const next = resolveSelection(id, true, "user")!;
    state.selected = next.id;
    if (next.write) sync.writeSelected(next.id);
  };
  const userExpands = (addresses: string[]): void => {
    state.expanded = new Set(addresses);
    sync.writeExpanded(state.expanded);
  };
  const userSwitches = (view: ViewName): void => {
    state.view = view;
    sync.writeView(view);
  };
  return { state, applied, sync, userSelects, userExpands, userSwitches };
}

describe("TraitSync", () => {
  it("writes user changes once each, and their echo does not come back as a kernel change", () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    f.userSelects("lin_1");
    f.userExpands(["b", "a"]);
    f.userSwitches("rolled");
    expect(model.sets).toEqual([
      ["selected", "lin_1"],
      ["expanded", ["a", "b"]],
      ["view", "rolled"],
    ]);
    expect(model.saves).toBe(3);
    expect(f.applied).toEqual([]);
  });

  it("applies a kernel change once and writes nothing back", () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    model.kernelSet({ selected: "act_1" });
    model.kernelSet({ expanded: ["a"] });
    model.kernelSet({ status: "re-running the model…" });
    expect(f.applied).toEqual([
      ["selected", "act_1"],
      ["expanded", ["a"]],
      ["status", "re-running the model…"],
    ]);
    expect(f.state.selected).toBe("act_1");
    expect(model.sets).toEqual([]);
    expect(model.saves).toBe(0);
  });

  it("does not ping-pong: a user change, then a kernel change, then the same value again", () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    f.userSelects("a");
    model.kernelSet({ selected: "b" });
    model.kernelSet({ selected: "b" }); // no change: no event
    f.userSelects("b"); // the model has it already: no event either
    expect(f.applied).toEqual([["selected", "b"]]);
    expect(model.sets).toEqual([
      ["selected", "a"],
      ["selected", "b"],
    ]);
  });

  it("switches the view before selecting when the kernel changes both at once", () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    model.kernelSet({ view: "rolled", selected: "lin" });
    expect(f.applied).toEqual([["view", "rolled"]]);
    expect(f.state).toMatchObject({ view: "rolled", selected: "lin" });
    expect(model.sets).toEqual([]);
  });

  it("reads the kernel's values typed, with the defaults for missing or bad ones", async () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    expect(await f.sync.readGraph()).toBeNull(); // the kernel's graph trait starts as {}
    model.kernelSet({ view: "sideways" as ViewName });
    expect(f.sync.view).toBe("unrolled");
    expect(f.applied).toEqual([]); // not a view: ignored
    const p = nested();
    model.kernelSet({ graph: p });
    expect(await f.sync.readGraph()).toBe(p);
    await new Promise((r) => setTimeout(r, 0)); // the graph is handed over once decoded
    expect(f.applied).toEqual([["graph", p]]);
  });

  it("stops listening when disposed", () => {
    const model = new BackboneLikeModel();
    const f = frontend(model);
    expect(model.listenerCount).toBe(5);
    f.sync.dispose();
    expect(model.listenerCount).toBe(0);
    model.kernelSet({ selected: "x" });
    expect(f.applied).toEqual([]);
  });
});
