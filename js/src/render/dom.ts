// The one DOM helper the widget's hand-built panels share.

/** A new `<tag class=cls>` holding `text`, if given. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
