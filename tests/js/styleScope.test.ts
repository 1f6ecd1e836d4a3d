// The widget's styles go inside its own element (render/styleScope.ts): they apply in whatever
// tree the host puts it (the page, marimo's shadow root, Voilà's element attached later).
import { describe, expect, it } from "vitest";
import { ALL_CSS, STYLE_ATTR, scopeStyles } from "../../js/src/render/styleScope";

interface FakeNode {
  tagName: string;
  attrs: Set<string>;
  textContent: string;
  setAttribute(name: string, value: string): void;
  hasAttribute(name: string): boolean;
}

function node(tagName: string): FakeNode {
  const attrs = new Set<string>();
  return {
    tagName,
    attrs,
    textContent: "",
    setAttribute: (name) => attrs.add(name),
    hasAttribute: (name) => attrs.has(name),
  };
}

/** An element not in any document yet (Voilà's `el` at render time), with a head it must not touch. */
function detachedEl(): { el: HTMLElement; children: FakeNode[]; head: FakeNode[] } {
  const children: FakeNode[] = [node("DIV")];
  const head: FakeNode[] = [];
  const el = {
    children,
    isConnected: false,
    ownerDocument: {
      createElement: (tag: string) => node(tag.toUpperCase()),
      head: { appendChild: (n: FakeNode) => head.push(n) },
    },
    prepend: (n: FakeNode) => children.unshift(n),
  };
  return { el: el as unknown as HTMLElement, children, head };
}

describe("the widget's styles", () => {
  it("go first inside the widget's element, not into the page's head", () => {
    const { el, children, head } = detachedEl();
    const style = scopeStyles(el) as unknown as FakeNode;
    expect(children[0]).toBe(style);
    expect(style.tagName).toBe("STYLE");
    expect(style.hasAttribute(STYLE_ATTR)).toBe(true);
    expect(style.textContent).toBe(ALL_CSS);
    expect(head).toEqual([]);
  });

  it("are put in once per element", () => {
    const { el, children } = detachedEl();
    const first = scopeStyles(el);
    expect(scopeStyles(el)).toBe(first);
    expect(children.filter((c) => c.tagName === "STYLE")).toHaveLength(1);
  });

  it("hold every rule the widget's layout needs: the toolbar, the canvas box, the panels", () => {
    expect(ALL_CSS).toContain(".lens-toolbar{display:flex");
    expect(ALL_CSS).toContain(".lens-canvas-wrap{flex:1");
    expect(ALL_CSS).toContain(".lens-call{"); // the inspector's sections (panelStyles.ts)
    expect(ALL_CSS).toContain(".lens-main>.lens-graph-col{min-width:50%}"); // panelLayout.ts, last
    expect(ALL_CSS.indexOf(".lens-main>.lens-graph-col")).toBeGreaterThan(ALL_CSS.indexOf(".lens-inspector{"));
  });
});
