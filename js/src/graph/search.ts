// Search over node ids/func names and module addresses/class names of the current view.
// A query that names a function ("conv2d", "linear") finds its ops before the modules of
// that name (Conv2d, Linear); ops found only through their module still make the list.
import { type GraphModel, ROOT } from "./tree";
import { isShown } from "./visibility";

export interface SearchHit {
  kind: "node" | "group";
  id: string; // node id or group key
  label: string;
  detail: string;
  score: number; // lower is better
}

/** Hidden nodes (params when not shown) are left out: a hit must be something one can see. */
export function search(model: GraphModel, query: string, limit = 30, showParams = true): SearchHit[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const hits: SearchHit[] = [];
  const rank = (text: string): number => {
    const t = text.toLowerCase();
    if (t === q) return 0;
    if (t.startsWith(q)) return 1;
    const i = t.indexOf(q);
    if (i < 0) return -1;
    // a match at a word boundary ("h.1" in "transformer.h.1.attn") beats one in the middle
    return /[._:\s]/.test(t[i - 1]) ? 2 : 3;
  };
  const best = (...texts: string[]): number => {
    let r = -1;
    for (const t of texts) {
      const s = rank(t);
      if (s >= 0 && (r < 0 || s < r)) r = s;
    }
    return r;
  };
  for (const g of model.groups.values()) {
    if (g.key === ROOT || g.kind === "chunk") continue; // a chunk is only a way in: its ops and modules are found
    const s = best(g.address, g.key, g.className);
    if (s >= 0) hits.push({ kind: "group", id: g.key, label: g.key, detail: g.className, score: s });
  }
  for (const n of model.view.nodes) {
    if (!isShown(n, showParams)) continue;
    // a node matched only through its module ranks below the module itself
    const byModule = rank(n.module);
    const own = best(n.id, n.func);
    const s = own >= 0 ? own : byModule >= 0 ? byModule + 4 : -1;
    if (s >= 0)
      hits.push({
        kind: "node",
        id: n.id,
        label: n.id,
        detail: n.module ? `${n.func} in ${n.module}` : n.func,
        score: s,
      });
  }
  // stable: equal scores keep execution / tree order; on a tie an op goes first
  const order = (a: SearchHit, b: SearchHit): number =>
    a.score - b.score || (a.kind === b.kind ? 0 : a.kind === "node" ? -1 : 1);
  hits.sort(order);
  return balanced(hits, limit).sort(order);
}

/** The best `limit` hits, but at most half of them modules while ops are left: "attn"
 * matches dozens of modules and the ops inside them must not fall off the list. */
function balanced(sorted: SearchHit[], limit: number): SearchHit[] {
  const groups = sorted.filter((h) => h.kind === "group");
  const nodes = sorted.filter((h) => h.kind === "node");
  const nGroups = Math.min(groups.length, Math.max(limit - nodes.length, Math.ceil(limit / 2)));
  return [...groups.slice(0, nGroups), ...nodes.slice(0, limit - nGroups)];
}
