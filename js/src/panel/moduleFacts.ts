// The module inspector's facts: class, constructor settings (extra_repr), parameters with
// their shapes and counts, and what the ops inside add up to (FLOPs, time, bytes), from the
// kernel's "moduleDetails" answer.
import type { ModuleDetailsResult } from "../graph/protocol";
import { h } from "../render/dom";
import { type FactRow, factsTable } from "./factsTable";
import { fmtBytes, fmtCount, fmtMs, fmtShape } from "./format";

// Parameters listed before "N more" (the answer holds up to 200).
const SHOWN_PARAMS = 24;

/** The rows of the facts table: [label, text or element]. */
export function moduleRows(d: ModuleDetailsResult, pass: string): FactRow[] {
  const rows: FactRow[] = [["class", d.className]];
  if (d.extraRepr) {
    const settings = h("span", "lens-mono lens-module-settings", d.extraRepr);
    settings.dataset.testid = "module-settings";
    rows.push(["settings", settings]);
  } else if (d.extraRepr === null) rows.push(["settings", "— (no model: the widget was built from a log)"]);
  const trainable = d.parameters.filter((p) => p.trainable).reduce((n, p) => n + p.numel, 0);
  const counted = d.parameters.reduce((n, p) => n + p.numel, 0);
  const frozen = counted - trainable;
  rows.push(["params", `${fmtCount(d.nParams)}${frozen > 0 ? ` (${fmtCount(frozen)} frozen)` : ""}`]);
  rows.push(["ops", `${fmtCount(d.nOps)}${d.nPasses > 1 ? ` over ${d.nPasses} passes` : ""}`]);
  rows.push(["passes", pass ? `${d.nPasses} — ${pass}` : String(d.nPasses)]);
  rows.push(["FLOPs", d.flops === null ? "— (no op inside has a formula)" : fmtCount(d.flops)]);
  if (d.timeMs !== null) rows.push(["time", fmtMs(d.timeMs)]);
  rows.push(["op outputs", `${fmtBytes(d.bytes)} (all ops inside)`]);
  return rows;
}

export function moduleFacts(d: ModuleDetailsResult, pass: string): HTMLElement {
  const table = factsTable(moduleRows(d, pass));
  table.dataset.testid = "module-facts";
  const params = h("div", "lens-params");
  params.dataset.testid = "module-params";
  for (const p of d.parameters.slice(0, SHOWN_PARAMS)) {
    const line = h("div", "lens-param");
    line.title = `${p.name} ${fmtShape(p.shape)} ${fmtCount(p.numel)}`;
    const short = d.address && p.name.startsWith(`${d.address}.`) ? p.name.slice(d.address.length + 1) : p.name;
    line.append(h("span", "lens-mono", short), h("span", "lens-muted", ` ${fmtShape(p.shape)} · ${fmtCount(p.numel)}`));
    params.append(line);
  }
  const more = d.parameters.length - SHOWN_PARAMS;
  if (more > 0) params.append(h("div", "lens-muted", `+${more} more`));
  const box = h("div", "");
  box.append(table);
  if (d.parameters.length) box.append(params);
  return box;
}
