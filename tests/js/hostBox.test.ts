// The automatic height's walk up the host's page (controls/hostBox.ts), through shadow roots.
import { describe, expect, it } from "vitest";
import { type BoxStyle, hostBox } from "../../js/src/controls/hostBox";
import { composedParent } from "../../js/src/render/composedTree";

// Just what the walk reads of an element: its parents (a shadow root's host), heights, style.
interface Fake {
  name: string;
  parentElement: Fake | null;
  parentNode: Fake | { host: Fake } | null;
  clientHeight: number;
  offsetHeight: number;
  style: BoxStyle;
  ownerDocument: typeof doc;
}

// the window is 1000 px tall
const doc: { body: Fake | null; documentElement: { clientHeight: number } } = {
  body: null,
  documentElement: { clientHeight: 1000 },
};
const plain: BoxStyle = { overflowY: "visible", maxHeight: "none" };

function fake(name: string, parent: Fake | null, height: number, style: BoxStyle = plain): Fake {
  return {
    name,
    parentElement: parent,
    parentNode: parent,
    clientHeight: height,
    offsetHeight: height,
    style,
    ownerDocument: doc,
  };
}

/** `el` at the top of a shadow root whose host is `host` (as marimo renders an anywidget). */
function inShadowOf(host: Fake, el: Fake): Fake {
  el.parentElement = null;
  el.parentNode = { host };
  return el;
}

const walk = (el: Fake) => hostBox(el as unknown as HTMLElement, (e) => (e as unknown as Fake).style);

describe("the host's box around the widget", () => {
  it("crosses a shadow root to its host", () => {
    const host = fake("marimo-anywidget", null, 0);
    const el = inShadowOf(host, fake("el", null, 700));
    expect((composedParent(el as unknown as Element) as unknown as Fake).name).toBe("marimo-anywidget");
    const child = fake("root", el, 700);
    expect((composedParent(child as unknown as Element) as unknown as Fake).name).toBe("el");
    const top = fake("html", null, 1000);
    expect(composedParent(top as unknown as Element)).toBeNull(); // neither a parent nor a shadow host
  });

  it("finds marimo's scrolled output box outside the widget's shadow root: the widget fits in it", () => {
    const body = fake("body", null, 1000);
    doc.body = body;
    const panel = fake("app", body, 961, { overflowY: "auto", maxHeight: "none" });
    const output = fake("output", panel, 610, { overflowY: "auto", maxHeight: "610px" });
    const host = fake("marimo-anywidget", fake("ui-element", output, 0), 0);
    const root = fake("lens-root", inShadowOf(host, fake("el", null, 921)), 921);
    // the box's own maximum, not its height now: nothing sizes itself from what it contains
    expect(walk(root)).toEqual({ px: 610, fit: true });
    output.clientHeight = 100;
    expect(walk(root)).toEqual({ px: 610, fit: true });
  });

  it("takes a notebook's panel taller than the widget, skipping an output area as tall as it", () => {
    const body = fake("body", null, 1000);
    doc.body = body;
    const panel = fake("notebook", body, 880, { overflowY: "auto", maxHeight: "none" });
    const area = fake("output-area", panel, 700, { overflowY: "auto", maxHeight: "none" });
    const root = fake("lens-root", fake("el", area, 700), 700);
    expect(walk(root)).toEqual({ px: 880, fit: false });
  });

  it("takes no more of a panel than the window shows (a panel that grows with its content)", () => {
    const body = fake("body", null, 1000);
    doc.body = body;
    const page = fake("page", body, 2400, { overflowY: "auto", maxHeight: "none" });
    const root = fake("lens-root", fake("el", page, 700), 700);
    expect(walk(root)).toEqual({ px: 1000, fit: false });
  });

  it("finds none in a page that does not scroll, up to the body", () => {
    const body = fake("body", null, 1000, { overflowY: "auto", maxHeight: "none" });
    doc.body = body;
    const root = fake("lens-root", fake("el", body, 700), 700);
    expect(walk(root)).toBeNull();
  });

  it("ignores a maximum it cannot read as px", () => {
    const body = fake("body", null, 1000);
    doc.body = body;
    const panel = fake("panel", body, 900, { overflowY: "scroll", maxHeight: "50%" });
    const root = fake("lens-root", fake("el", panel, 700), 700);
    expect(walk(root)).toEqual({ px: 900, fit: false });
  });
});
