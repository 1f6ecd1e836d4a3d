// The widget's view state, in one place: what is shown (view, expanded groups, parameters),
// what is selected, and what the camera does after the next layout. Every change goes
// through `update`; components subscribe to the keys they draw. Whether a change is written
// back to the kernel depends on where it came from (kernel/traitSync.ts), so writes stay
// with the controller (app.ts) and are not a side effect of the store.
import type { ViewName } from "../graph/protocol";
import type { Anchor } from "../render/anchor";
import type { FitSearch } from "../render/camera";

/** What the camera does after the next layout. */
export type CameraIntent =
  | { kind: "keep" } // stay where the user left it
  | { kind: "fit" } // fit the laid-out graph on screen
  | { kind: "anchor"; anchor: Anchor } // after a view switch: keep this node's place on screen
  | { kind: "search"; search: FitSearch }; // a first view, trying expansions until one fits; then fit

export interface ViewState {
  readonly view: ViewName;
  readonly expanded: ReadonlySet<string>; // module addresses and group keys that are open
  readonly showParams: boolean;
  readonly selected: string; // node id in the current view ("" for none)
  readonly camera: CameraIntent;
}

export type ViewKey = keyof ViewState;
export type Listener = (state: ViewState, changed: ReadonlySet<ViewKey>) => void;

export const KEEP: CameraIntent = { kind: "keep" };
export const FIT: CameraIntent = { kind: "fit" };

export function initialViewState(): ViewState {
  return { view: "unrolled", expanded: new Set(), showParams: false, selected: "", camera: FIT };
}

export class ViewStore {
  private current: ViewState;
  private listeners: { keys: ReadonlySet<ViewKey> | null; fn: Listener }[] = [];

  constructor(initial: ViewState = initialViewState()) {
    this.current = initial;
  }

  get state(): ViewState {
    return this.current;
  }

  /** The one way to change the state: the keys whose value changes are set, and each
   * subscriber to one of them is called once, after all are set. */
  update(patch: Partial<ViewState>): void {
    const changed = new Set<ViewKey>();
    for (const key of Object.keys(patch) as ViewKey[]) {
      if (patch[key] !== undefined && patch[key] !== this.current[key]) changed.add(key);
    }
    if (changed.size === 0) return;
    this.current = { ...this.current, ...patch };
    for (const { keys, fn } of [...this.listeners]) {
      if (keys === null || [...changed].some((k) => keys.has(k))) fn(this.current, changed);
    }
  }

  /** Calls `fn` after each update that changes one of `keys` (every key: null); returns the unsubscribe. */
  subscribe(keys: readonly ViewKey[] | null, fn: Listener): () => void {
    const entry = { keys: keys && new Set(keys), fn };
    this.listeners.push(entry);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== entry);
    };
  }

  /** The camera intent for the layout being placed, which it uses up: the next one keeps the camera. */
  takeCamera(): CameraIntent {
    const intent = this.current.camera;
    this.update({ camera: KEEP });
    return intent;
  }

  /** A first view's search for the expansion that fits, while one runs. */
  get search(): FitSearch | null {
    const c = this.current.camera;
    return c.kind === "search" ? c.search : null;
  }
}
