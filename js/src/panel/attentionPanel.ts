// The inspector's "attention weights" section for attention ops (SDPA, MHA): one head's
// query × key map, recomputed by the kernel from the op's saved query, key and mask, with
// pickers for the head and the batch item.

import type { AttentionRequest } from "../graph/protocol";
import type { AttentionMap, OnWaiting } from "../kernel/messages";
import { h } from "../render/dom";
import type { Theme } from "../render/theme";
import { indexSlider } from "./pickers";
import { plotAttention, purge } from "./plots";
import { Section } from "./section";

export type AttentionParams = AttentionRequest["params"];

export interface AttentionDeps {
  theme: () => Theme;
  fetchAttention: (p: AttentionParams, onSlow: () => void) => Promise<AttentionMap>;
  rerun: (id: string, onWaiting: OnWaiting) => Promise<void>;
  noRerun: () => string | null;
  sideLabel?: () => string | null; // in a comparison, the side the activation plot shows
}

export class AttentionPanel {
  readonly section: Section<AttentionMap>;
  private params: AttentionParams = { id: "" };
  private saved = true;
  private last: AttentionMap | null = null;
  private plot = h("div", "lens-plot");
  private noteEl = h("div", "lens-note");

  constructor(private deps: AttentionDeps) {
    this.section = new Section<AttentionMap>("attention weights", "attention", {
      fetch: (onSlow) => deps.fetchAttention(this.params, onSlow),
      show: (map) => this.show(map),
      clear: () => purge(this.plot),
      rerun: (onWaiting) => deps.rerun(this.params.id, onWaiting),
      noRerun: () => deps.noRerun(),
    });
    this.plot.dataset.testid = "attention-plot";
    this.section.el.classList.add("lens-attn");
    this.section.el.append(this.plot, this.noteEl);
  }

  get el(): HTMLElement {
    return this.section.el;
  }

  /**
   * Shows the maps of unrolled attention op `id`. `inputsSaved`: its query, key and mask are
   * in the kernel. The head and batch item picked before stay when the pass changes.
   */
  load(id: string, inputsSaved: boolean, keepPicks = false): void {
    this.params = keepPicks ? { ...this.params, id } : { id };
    this.saved = inputsSaved;
    this.last = null;
    // the kernel recomputes the weights from A's saved inputs: in a comparison say so,
    // whichever side (B, A − B) the activation below shows
    const side = this.deps.sideLabel?.() ?? null;
    this.section.setTitle(side ? "attention weights (A)" : "attention weights");
    this.section.el.dataset.side = side ? "a" : "";
    this.section.load(this.saved, "attention inputs");
  }

  private pick(change: Partial<AttentionParams>): void {
    this.params = { ...this.params, ...change };
    this.last = null;
    this.section.load(this.saved, "attention inputs");
  }

  redraw(): void {
    if (this.last) this.show(this.last);
  }

  private show(map: AttentionMap): void {
    this.last = map;
    const r = map.result;
    const controls = this.section.controls;
    controls.replaceChildren();
    const { head, batch } = r;
    const heads = indexSlider("head", head.index, head.size, "head-slider", (i) => this.pick({ head: i }));
    if (head.size < 2) heads.querySelector("input")!.disabled = true;
    controls.append(heads);
    if (batch.size > 1) {
      controls.append(
        indexSlider("batch", batch.index, batch.size, "attention-batch-slider", (i) => this.pick({ batch: i })),
      );
    }
    const what = h("div", "lens-muted", `${r.queries} query × ${r.keys} key tokens, softmax(QKᵀ·scale + mask)`);
    controls.append(what);
    plotAttention(this.plot, map, this.deps.theme());
    this.plot.dataset.head = String(head.index);
    this.plot.dataset.batch = String(batch.index);
    this.noteEl.textContent = r.reduced ? `reduced: ${r.note}` : "";
    performance.mark("lens:attention-done", { detail: { id: r.id, head: head.index, batch: batch.index } });
  }

  dispose(): void {
    this.section.cancel();
    purge(this.plot);
  }
}
