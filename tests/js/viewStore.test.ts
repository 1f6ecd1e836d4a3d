// The view state store: one update path, subscribers told once per change of their keys,
// the camera intent used up by the layout that places it.
import { describe, expect, it } from "vitest";
import { FitSearch } from "../../js/src/render/camera";
import { FIT, KEEP, type ViewKey, ViewStore } from "../../js/src/state/viewStore";

describe("ViewStore", () => {
  it("starts on the unrolled view, nothing open or selected, fitting the first layout", () => {
    const s = new ViewStore().state;
    expect([s.view, s.expanded.size, s.selected, s.showParams, s.camera]).toEqual(["unrolled", 0, "", false, FIT]);
  });

  it("calls a subscriber once per update that changes one of its keys, with what changed", () => {
    const store = new ViewStore();
    const seen: ViewKey[][] = [];
    store.subscribe(["view", "selected"], (_s, changed) => seen.push([...changed].sort()));
    store.update({ view: "rolled", selected: "a", showParams: true });
    store.update({ showParams: false }); // not one of its keys
    store.update({ view: "rolled" }); // no change
    store.update({ selected: "b" });
    expect(seen).toEqual([["selected", "showParams", "view"], ["selected"]]); // every key the update changed
  });

  it("hands subscribers the whole new state, and stops after unsubscribe", () => {
    const store = new ViewStore();
    const views: string[] = [];
    const off = store.subscribe(null, (s) => views.push(`${s.view}:${s.selected}`));
    store.update({ selected: "x" });
    off();
    store.update({ view: "rolled" });
    expect(views).toEqual(["unrolled:x"]);
    expect(store.state.view).toBe("rolled");
  });

  it("keeps each state object as it was: an update makes a new one", () => {
    const store = new ViewStore();
    const before = store.state;
    store.update({ expanded: new Set(["h.0"]) });
    expect(before.expanded.size).toBe(0);
    expect([...store.state.expanded]).toEqual(["h.0"]);
  });

  it("gives the camera intent to one layout only", () => {
    const store = new ViewStore();
    expect(store.takeCamera()).toEqual(FIT);
    expect(store.takeCamera()).toEqual(KEEP);
    store.update({ camera: { kind: "anchor", anchor: { node: "n", sx: 10, sy: 20, scale: 1 } } });
    expect(store.takeCamera().kind).toBe("anchor");
    expect(store.state.camera).toEqual(KEEP);
  });

  it("names the running first-view search, and none once the intent moves on", () => {
    const store = new ViewStore();
    expect(store.search).toBeNull();
    const search = new FitSearch([["a"], ["a", "b"]], 0);
    store.update({ camera: { kind: "search", search } });
    expect(store.search).toBe(search);
    store.update({ camera: FIT });
    expect(store.search).toBeNull();
  });
});
