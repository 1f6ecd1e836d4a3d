// The DOM helpers the widget's hand-built panels share.

/** A new `<tag class=cls>` holding `text`, if given. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A file path as text that wraps only after a "/" (a `<wbr>` there), so a narrow panel never
 * splits a name or a line number ("…/gpt2/modeling_gpt2.py:182"). */
export function breakablePath(path: string): Node[] {
  const out: Node[] = [];
  const parts = path.split("/");
  parts.forEach((p, i) => {
    out.push(document.createTextNode(i < parts.length - 1 ? `${p}/` : p));
    if (i < parts.length - 1) out.push(document.createElement("wbr"));
  });
  return out;
}
