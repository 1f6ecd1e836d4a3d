// The search box: results while typing, arrow keys to move, Enter or a click to jump.
import type { SearchHit } from "../graph/search";
import { h } from "../render/dom";

export class SearchBox {
  readonly el = h("div", "lens-search");
  private input = document.createElement("input");
  private results = h("div", "lens-results");
  private hits: SearchHit[] = [];
  private hitIndex = 0;
  private pendingHide: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private find: (query: string) => SearchHit[],
    private jump: (hit: SearchHit) => void,
  ) {
    const input = this.input;
    input.placeholder = "Search ops or modules…";
    input.dataset.testid = "search";
    this.results.dataset.testid = "search-results";
    this.results.hidden = true;
    this.el.append(input, this.results);
    const show = (): void => {
      clearTimeout(this.pendingHide); // typed or focused again: a hide left from the last blur must not close these results
      this.hits = this.find(input.value);
      this.hitIndex = 0;
      this.renderResults();
    };
    input.addEventListener("input", show);
    input.addEventListener("focus", show);
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
        ev.preventDefault();
        if (this.hits.length) {
          this.hitIndex = (this.hitIndex + (ev.key === "ArrowDown" ? 1 : this.hits.length - 1)) % this.hits.length;
          this.renderResults();
        }
      } else if (ev.key === "Enter") {
        ev.preventDefault();
        const hit = this.hits[this.hitIndex];
        if (hit) this.choose(hit);
      } else if (ev.key === "Escape") {
        this.results.hidden = true;
        input.blur();
      }
      // JupyterLab's shortcuts stay out through keepKeysInControls (hostKeys.ts), which lets
      // Ctrl/⌘ ones through: stopped here, Ctrl+S opened the browser's "Save page as"
    });
    input.addEventListener("blur", () => {
      this.pendingHide = setTimeout(() => (this.results.hidden = true), 150);
    });
  }

  private renderResults(): void {
    this.results.replaceChildren();
    if (!this.input.value.trim()) {
      this.results.hidden = true;
      return;
    }
    this.results.hidden = false;
    this.keepInsideWidget();
    if (this.hits.length === 0) {
      this.results.append(h("div", "lens-result lens-muted", "no match"));
      return;
    }
    this.hits.forEach((hit, i) => {
      const row = h("div", "lens-result");
      row.dataset.testid = "search-result";
      row.setAttribute("aria-selected", String(i === this.hitIndex));
      row.title = `${hit.label} — ${hit.detail}`;
      row.append(
        h("span", "lens-mono", (hit.kind === "group" ? "▣ " : "") + hit.label),
        h("span", "lens-muted", hit.detail),
      );
      row.onmousedown = (ev) => {
        ev.preventDefault();
        this.choose(hit);
      };
      this.results.append(row);
    });
  }

  /** Shifts the dropdown left where it would run past the widget's right edge. */
  private keepInsideWidget(): void {
    const root = this.el.closest(".lens-root");
    this.results.style.left = "0px";
    if (!root) return;
    const inner = root.getBoundingClientRect();
    const box = this.results.getBoundingClientRect();
    const over = box.right - (inner.right - 8);
    const room = box.left - (inner.left + 8);
    if (over > 0) this.results.style.left = `${-Math.min(over, Math.max(0, room))}px`;
  }

  private choose(hit: SearchHit): void {
    this.results.hidden = true;
    this.jump(hit);
  }
}
