// The two-column table of facts (label, value) the op and the module inspectors show.
import { h } from "../render/dom";

/** One row: its label, and its value as text or as an element (a parameter list, a cell
 * the inspector updates later). */
export type FactRow = [string, string | HTMLElement];

/** A `lens-facts` table, a row per fact; each row's `data-key` is its label. */
export function factsTable(rows: FactRow[]): HTMLTableElement {
  const table = h("table", "lens-facts");
  for (const [k, v] of rows) {
    const tr = h("tr", "");
    tr.dataset.key = k;
    const td = h("td", "");
    td.append(v);
    tr.append(h("th", "", k), td);
    table.append(tr);
  }
  return table;
}
