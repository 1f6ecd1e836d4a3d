// The toolbar: title, fit / expand all / collapse all, the view switch, the shapes and
// parameters toggles, the search box, the SVG download, and the kernel's status.
import type { ViewName } from "../graph/protocol";
import type { SearchHit } from "../graph/search";
import { fmtCount } from "../panel/format";
import { h } from "../render/dom";
import { SearchBox } from "./searchBox";

const TITLE_TAIL = 5; // the letters of a cut class name kept after the ellipsis

export interface ToolbarActions {
  fit(): void;
  expandAll(): void;
  collapseAll(): void;
  setView(view: ViewName): void;
  showShapes(on: boolean): void;
  showParams(on: boolean): void;
  exportSvg(): void;
  search(query: string): SearchHit[];
  jump(hit: SearchHit): void;
}

export class Toolbar {
  readonly el = h("div", "lens-toolbar");
  private title = h("div", "lens-title");
  private status = h("span", "lens-status");
  private viewBtns: Record<ViewName, HTMLButtonElement>;

  constructor(actions: ToolbarActions) {
    const searchBox = new SearchBox(actions.search, actions.jump).el;
    this.el.dataset.testid = "toolbar";
    this.title.dataset.testid = "model-title";
    const seg = h("div", "lens-seg");
    this.viewBtns = {
      unrolled: button("Unrolled", "view-unrolled", "Every call of a repeated layer on its own", () =>
        actions.setView("unrolled"),
      ),
      rolled: button("Rolled", "view-rolled", "Repeated calls of a layer folded into one node (×N)", () =>
        actions.setView("rolled"),
      ),
    };
    seg.append(this.viewBtns.unrolled, this.viewBtns.rolled);
    this.status.dataset.testid = "status";
    this.el.append(
      this.title,
      button("Fit", "fit", "Fit the graph in view", actions.fit),
      button("Expand all", "expand-all", "Expand every module", actions.expandAll, "Expand"),
      button("Collapse all", "collapse-all", "Collapse every module", actions.collapseAll, "Collapse"),
      h("span", "lens-sep"),
      seg,
      h("span", "lens-sep"),
      checkbox("shapes on edges", "toggle-shapes", true, actions.showShapes, "shapes"), // where they fit
      checkbox("parameters", "toggle-params", false, actions.showParams, "params"),
      h("span", "lens-sep"),
      searchBox,
      button("SVG", "export-svg", "Download what is on screen as an SVG (vector, labels as text)", actions.exportSvg),
      h("span", "lens-spacer"),
      this.status,
    );
  }

  /** Shows parameters if they are hidden, as ticking "parameters" does; true if they were hidden. */
  revealParams(): boolean {
    const box = this.el.querySelector<HTMLInputElement>("[data-testid=toggle-params]");
    if (!box || box.checked) return false;
    box.checked = true;
    box.dispatchEvent(new Event("change"));
    return true;
  }

  showView(view: ViewName): void {
    for (const v of ["unrolled", "rolled"] as ViewName[])
      this.viewBtns[v].setAttribute("aria-pressed", String(v === view));
  }

  showTitle(modelClass: string | null, nOps: number): void {
    const ops = `${fmtCount(nOps)} ops`;
    if (modelClass === null) this.title.textContent = "no graph";
    else {
      // a class name too long for the toolbar line is cut in the middle (its head shrinks,
      // its last letters and the op count stay): "GPT2LMHe…Model · 554 ops"; the tooltip has it whole
      const keep = modelClass.length > TITLE_TAIL * 2 ? TITLE_TAIL : 0;
      const head = h("span", "lens-title-head", modelClass.slice(0, modelClass.length - keep));
      const tail = h("span", "lens-title-tail", modelClass.slice(modelClass.length - keep));
      this.title.replaceChildren(head, tail, h("small", "", `· ${ops}`));
    }
    this.title.title = modelClass === null ? "" : `${modelClass} · ${ops}`;
  }

  showStatus(text: string): void {
    this.status.textContent = text;
  }
}

/** `short`: the label narrow widgets show instead (styles.ts). */
function button(label: string, testid: string, title: string, onClick: () => void, short?: string): HTMLButtonElement {
  const b = h("button", "lens-btn");
  b.append(...labelled(label, short));
  b.dataset.testid = testid;
  b.title = title;
  b.onclick = () => onClick();
  return b;
}

function checkbox(
  label: string,
  testid: string,
  on: boolean,
  onChange: (on: boolean) => void,
  short: string,
): HTMLLabelElement {
  const l = h("label", "lens-check");
  const c = document.createElement("input");
  c.type = "checkbox";
  c.checked = on;
  c.dataset.testid = testid;
  c.onchange = () => onChange(c.checked);
  l.title = label;
  l.append(c, ...labelled(label, short));
  return l;
}

/** The label, and a shorter one that narrow widgets show instead (styles.ts). */
function labelled(label: string, short?: string): (string | HTMLElement)[] {
  return short ? [h("span", "lens-long", label), h("span", "lens-short", short)] : [label];
}
