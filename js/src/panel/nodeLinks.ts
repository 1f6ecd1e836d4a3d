// A row of buttons naming nodes (an op's inputs and outputs, a module's output): a click
// selects the node. Long lists stop at 40 with a count of the rest.
import { h } from "../render/dom";

const SHOWN_LINKS = 40;

/** "inputs (3)" and a button per id, labelled by `name(id)` (the id where it has none). */
export function nodeLinks(
  label: string,
  ids: string[],
  name: (id: string) => string | undefined,
  select: (id: string) => void,
): HTMLElement {
  const box = h("div", "lens-links");
  box.append(h("span", "lens-links-label", `${label} (${ids.length})`));
  for (const id of ids.slice(0, SHOWN_LINKS)) {
    const a = h("button", "lens-link", name(id) ?? id);
    a.title = id;
    a.dataset.id = id;
    a.onclick = () => select(id);
    box.append(a);
  }
  if (ids.length > SHOWN_LINKS) box.append(h("span", "lens-muted", ` +${ids.length - SHOWN_LINKS} more`));
  return box;
}
