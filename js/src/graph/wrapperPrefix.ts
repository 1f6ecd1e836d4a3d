// The wrapper prefix every module address of a wrapped model shares: PEFT's
// "base_model.model.", DistributedDataParallel's "module.", torch.compile's "_orig_mod.".
// Boxes show addresses without it ("model.layers.0.self_attn", not a middle-cut
// "base_model.model…0.self_attn"); the tooltip and the inspector keep the whole address.

/** The dotted prefix (with its final dot) that every module address below the root shares,
 * up to its first numbered part (a Sequential's "0" tells blocks apart, it wraps nothing);
 * "" when they share none. */
export function wrapperPrefix(addresses: Iterable<string>): string {
  let common: string[] | null = null;
  for (const address of addresses) {
    if (address === "") continue; // the root
    const parts = address.split(".");
    if (common === null) {
      common = parts;
      continue;
    }
    let i = 0;
    while (i < common.length && i < parts.length && common[i] === parts[i]) i++;
    common = common.slice(0, i);
    if (!common.length) return "";
  }
  if (!common) return "";
  const numbered = common.findIndex((p) => /^\d+$/.test(p));
  const kept = numbered < 0 ? common : common.slice(0, numbered);
  return kept.length ? `${kept.join(".")}.` : "";
}

/** `address` as a box shows it: without the wrapper prefix, where it has it below the wrapper. */
export function unwrapped(address: string, prefix: string | undefined): string {
  return prefix && address.length > prefix.length && address.startsWith(prefix)
    ? address.slice(prefix.length)
    : address;
}
