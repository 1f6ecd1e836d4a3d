// The groups the frontend adds to a view's module tree, so a large model reads at a glance:
// - a *stack*: in the unrolled view, the blocks of a repeated chain (payload.repeatedBlocks,
//   h.0 … h.23) sit in one group "GPT2Block ×24", collapsed by default;
// - in the rolled view the payload already folds the chain onto its first block: that block
//   (and every module in it) stands for the whole chain, ×24, and opens when any of its twins
//   (h.7.attn for h.0.attn) is open;
// - an *output group*: outputs of one kind ("output.past_key_values.layers.3.keys", …) are one
//   group "past_key_values ×48" placed beside the modules that produced them.
// Node ids never change, nor the payload's nodes: the added group keys go in a view's own
// list of each node's groups (GraphModel.groupsOf).
import type { GraphPayload, NodeInfo, ViewName } from "./protocol";

export type AddedKind = "stack" | "outputs";

export interface AddedGroup {
  key: string; // also its address in the expanded set
  kind: AddedKind;
  className: string; // the blocks' class for a stack; the outputs' name for an output group
  members: string[]; // block addresses, or output node ids
}

export interface Folds {
  groups: (readonly string[])[]; // each of the view's nodes' groups, the added groups included
  added: Map<string, AddedGroup>;
  repeat: Map<string, number>; // rolled: module address -> how many blocks it stands for
  aliases: Map<string, string[]>; // rolled: module address -> its twins in the folded blocks
}

const STACK_MARK = "×";
const MIN_OUTPUTS = 2;

/** "transformer.h.0×24": the expanded-set address of a stack (lens_widget/widget/group_keys.py). */
export function stackKey(blocks: readonly string[]): string {
  return `${blocks[0]}${STACK_MARK}${blocks.length}`;
}

/** "output.past_key_values" for "output.past_key_values.layers.0.keys"; null for "output.logits". */
export function outputKind(id: string): string | null {
  const parts = id.split(".");
  return parts.length >= 3 && parts[0] === "output" ? `output.${parts[1]}` : null;
}

// An output group of this many outputs or fewer is titled by their names.
const NAMED_OUTPUTS = 4;

/** An output group's title: the names of a few named outputs ("boxes, labels, scores" for a
 * detector's list of dicts, where "0 ×3" said nothing), else their kind and count
 * ("past_key_values ×48", "kv ×4" of four numbered ones). */
export function outputGroupTitle(g: { address: string; className: string; members: readonly string[] }): string {
  const prefix = `${g.address}.`;
  const names = g.members.map((id) => (id.startsWith(prefix) ? id.slice(prefix.length) : id));
  // positions alone ("0, 1, 2, 3" of a list of caches) say less than their kind and count
  const named = names.some((n) => !/^\d+$/.test(n.split(".")[0]));
  return named && names.length <= NAMED_OUTPUTS ? names.join(", ") : `${g.className} ×${names.length}`;
}

function within(address: string, block: string): boolean {
  return address === block || address.startsWith(`${block}.`);
}

/**
 * The repeated chains, plus the chains nested in a folded block copied into its other blocks:
 * the log keeps `h.0.sub.*` but drops `h.1.sub.*` (the rolled view shows them through h.0); the
 * unrolled view shows h.1 too, so it folds there the same way.
 */
export function allChains(chains: readonly string[][], modules: ReadonlySet<string>): string[][] {
  const out = chains.map((c) => [...c]);
  for (const outer of chains)
    for (const inner of chains) {
      if (inner === outer || !within(inner[0], outer[0]) || inner[0] === outer[0]) continue;
      for (const other of outer.slice(1)) {
        const moved = inner.map((a) => other + a.slice(outer[0].length));
        if (moved.every((a) => modules.has(a))) out.push(moved);
      }
    }
  return out;
}

export function foldView(payload: GraphPayload, viewName: ViewName): Folds {
  const view = viewName === "rolled" ? payload.rolled : payload.unrolled;
  const chains = (payload.repeatedBlocks ?? []).filter((c) => c.length >= 2);
  const added = new Map<string, AddedGroup>();
  const repeat = new Map<string, number>();
  const aliases = new Map<string, string[]>();
  const nodes = view.nodes;
  let groups: (readonly string[])[] | null = null;
  // a group key of this view -> its module address
  const addressOf = (key: string): string => (viewName === "unrolled" ? key.replace(/:\d+$/, "") : key);
  // where output groups may not go: inside a stack, or inside a folded block
  let inFold: (key: string) => boolean;

  if (viewName === "unrolled") {
    const stackOf = new Map<string, string>(); // block address -> stack key
    const className = new Map(chains.length ? payload.modules.map((m) => [m.address, m.className]) : []);
    for (const chain of allChains(chains, new Set(chains.length ? payload.modules.map((m) => m.address) : []))) {
      const key = stackKey(chain);
      added.set(key, { key, kind: "stack", className: className.get(chain[0]) ?? "Module", members: chain });
      for (const block of chain) stackOf.set(block, key);
    }
    if (stackOf.size) {
      // nodes in a row mostly share one groups array (kernel/wire.ts): one answer for them all
      let prevIn: readonly string[] | null = null;
      let prevOut: readonly string[] = [];
      groups = nodes.map((n) => {
        if (n.groups === prevIn) return prevOut;
        let changed = false;
        const out: string[] = [];
        for (const g of n.groups) {
          const stack = stackOf.get(addressOf(g));
          if (stack !== undefined && out[out.length - 1] !== stack) {
            out.push(stack);
            changed = true;
          }
          out.push(g);
        }
        prevIn = n.groups;
        return (prevOut = changed ? out : n.groups);
      });
    }
    inFold = (key) => added.has(key);
  } else {
    const addresses = payload.modules.map((m) => m.address);
    for (const chain of chains) {
      const first = chain[0];
      for (const a of addresses) {
        if (within(a, first)) repeat.set(a, (repeat.get(a) ?? 1) * chain.length);
        for (const other of chain.slice(1))
          if (within(a, other)) {
            const twin = first + a.slice(other.length);
            const list = aliases.get(twin);
            if (list) list.push(a);
            else aliases.set(twin, [a]);
          }
      }
    }
    inFold = (key) => repeat.has(key);
  }

  groups ??= nodes.map((n) => n.groups);
  groupOutputs(nodes, groups, view.edges, inFold, added);
  return { groups, added, repeat, aliases };
}

/** Outputs of one kind move into one group, placed in the innermost group that holds all their producers. */
function groupOutputs(
  nodes: readonly NodeInfo[],
  groups: (readonly string[])[], // each node's groups: those of the moved outputs are replaced
  edges: readonly { source: string; target: string }[],
  inFold: (key: string) => boolean,
  added: Map<string, AddedGroup>,
): void {
  const byKind = new Map<string, NodeInfo[]>();
  for (const n of nodes) {
    if (n.kind !== "output") continue;
    const kind = outputKind(n.id);
    if (kind === null) continue;
    const list = byKind.get(kind);
    if (list) list.push(n);
    else byKind.set(kind, [n]);
  }
  const kinds = [...byKind].filter(([, members]) => members.length >= MIN_OUTPUTS);
  if (!kinds.length) return;
  const outputs = new Set(kinds.flatMap(([, members]) => members.map((m) => m.id)));
  const producers = new Map<string, string[]>();
  for (const e of edges) {
    if (!outputs.has(e.target)) continue;
    const list = producers.get(e.target);
    if (list) list.push(e.source);
    else producers.set(e.target, [e.source]);
  }
  // the groups of the producers only, not of every node
  const wanted = new Set([...producers.values()].flat());
  const groupsOf = new Map<string, readonly string[]>();
  nodes.forEach((n, i) => wanted.has(n.id) && groupsOf.set(n.id, groups[i]));
  const moved = new Map<string, string[]>(); // output id -> its new groups
  for (const [kind, members] of kinds) {
    let common: readonly string[] | null = null;
    for (const out of members)
      for (const p of producers.get(out.id) ?? []) {
        const gs = groupsOf.get(p) ?? [];
        if (common === null) common = gs;
        else {
          let i = 0;
          while (i < common.length && i < gs.length && common[i] === gs[i]) i++;
          common = common.slice(0, i);
        }
      }
    const place: string[] = [];
    for (const g of common ?? []) {
      if (inFold(g)) break;
      place.push(g);
    }
    const name = kind.slice("output.".length);
    added.set(kind, { key: kind, kind: "outputs", className: name, members: members.map((m) => m.id) });
    for (const out of members) moved.set(out.id, [...place, kind]);
  }
  nodes.forEach((n, i) => {
    const g = moved.get(n.id);
    if (g) groups[i] = g;
  });
}
