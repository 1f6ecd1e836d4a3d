// Walking up from the widget through the page as it is drawn: past the top of a shadow root to
// its host (marimo renders each anywidget in a shadow root, where `parentElement` ends).

/** The parent of `node` as drawn: its parent element, or the host of the shadow root it tops. */
export function composedParent(node: Element): Element | null {
  if (node.parentElement) return node.parentElement;
  const root = node.parentNode as (ParentNode & { host?: Element }) | null;
  return root?.host ?? null;
}
