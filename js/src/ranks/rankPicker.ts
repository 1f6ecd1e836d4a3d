// The rank picker of a widget of several ranks' logs (LensWidget.from_logs): which rank's
// values the graph shows, and which rank it is compared with. A choice is a "showRank"
// request; the kernel answers with the new graph, whose `ranks` the bar then shows.
import type { RanksInfo, ShowRankParams } from "../graph/protocol";
import { option } from "../panel/pickers";
import { h } from "../render/dom";
import { compareChoices, rankCaption, rankName, showRankParams } from "./rankLogic";

export interface RankPickerDeps {
  showRank(params: ShowRankParams): Promise<unknown>;
  onPage(): boolean; // a saved page: no kernel holds the other ranks' logs
}

const NO_COMPARISON = "";

export class RankPicker {
  readonly el = h("div", "lens-toolbar lens-rank-bar");
  private rank = h("select", "lens-select");
  private other = h("select", "lens-select");
  private caption = h("span", "lens-muted");
  private note = h("span", "lens-muted");
  private info: RanksInfo | null = null;

  constructor(private deps: RankPickerDeps) {
    this.el.dataset.testid = "rank-bar";
    this.el.hidden = true;
    this.rank.dataset.testid = "rank-picker";
    this.rank.title = "The rank whose values the graph shows";
    this.other.dataset.testid = "rank-compare";
    this.other.title = "Color every op by how much its output differs on another rank";
    this.caption.dataset.testid = "rank-caption";
    this.note.dataset.testid = "rank-note";
    this.rank.onchange = () => this.choose();
    this.other.onchange = () => this.choose();
    this.el.append(
      h("span", "", "rank"),
      this.rank,
      h("span", "", "compare with"),
      this.other,
      this.caption,
      this.note,
    );
  }

  /** The ranks of the graph now shown (none: a widget of one log, the bar hides). */
  show(info: RanksInfo | undefined): void {
    this.info = info ?? null;
    this.el.hidden = !info;
    this.el.dataset.shown = info ? `${info.shown}|${info.compareWith ?? ""}` : "";
    if (!info) return;
    this.rank.replaceChildren(...info.ranks.map((r) => option(String(r), rankName(r, info))));
    this.rank.value = String(info.shown);
    const others = compareChoices(info).map((r) => option(String(r), `rank ${r}`));
    this.other.replaceChildren(option(NO_COMPARISON, "—"), ...others);
    this.other.value = info.compareWith === null ? NO_COMPARISON : String(info.compareWith);
    const onPage = this.deps.onPage();
    this.rank.disabled = this.other.disabled = onPage;
    this.caption.textContent = rankCaption(info);
    // a saved page shows the rank it was saved on: the other ranks' logs are in the kernel
    this.note.textContent = onPage ? " (a saved page: the other ranks need the notebook's kernel)" : "";
  }

  private choose(): void {
    if (!this.info) return;
    const rank = Number(this.rank.value);
    const other = this.other.value === NO_COMPARISON ? null : Number(this.other.value);
    this.rank.disabled = this.other.disabled = true;
    this.note.textContent = " switching…";
    const back = this.info;
    this.deps.showRank(showRankParams(rank, other)).then(
      () => {
        // the new graph's `ranks` has shown the choice (show); a reply without one leaves it as is
        this.rank.disabled = this.other.disabled = false;
        if (this.note.textContent === " switching…") this.note.textContent = "";
      },
      (e: Error) => {
        this.show(back);
        this.note.textContent = ` could not switch: ${e.message}`;
      },
    );
  }
}
