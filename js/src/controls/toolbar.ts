// The toolbar: title, fit / expand all / collapse all, the view switch, the shapes and
// parameters toggles, the search box, the SVG download, and the kernel's status.
import type { ViewName } from "../model/protocol";
import { h } from "../render/dom";

export interface ToolbarActions {
  fit(): void;
  expandAll(): void;
  collapseAll(): void;
  setView(view: ViewName): void;
  showShapes(on: boolean): void;
  showParams(on: boolean): void;
  exportSvg(): void;
}

export class Toolbar {
  readonly el = h("div", "lens-toolbar");
  private title = h("div", "lens-title");
  private status = h("span", "lens-status");
  private viewBtns: Record<ViewName, HTMLButtonElement>;

  constructor(actions: ToolbarActions, searchBox: HTMLElement) {
    this.el.dataset.testid = "toolbar";
    const seg = h("div", "lens-seg");
    this.viewBtns = {
      unrolled: button("Unrolled", "view-unrolled", "Every call of a repeated layer on its own", () => actions.setView("unrolled")),
      rolled: button("Rolled", "view-rolled", "Repeated calls of a layer folded into one node (×N)", () => actions.setView("rolled")),
    };
    seg.append(this.viewBtns.unrolled, this.viewBtns.rolled);
    this.status.dataset.testid = "status";
    this.el.append(
      this.title,
      button("Fit", "fit", "Fit the graph in view", actions.fit),
      button("Expand all", "expand-all", "Expand every module", actions.expandAll),
      button("Collapse all", "collapse-all", "Collapse every module", actions.collapseAll),
      h("span", "lens-sep"),
      seg,
      h("span", "lens-sep"),
      checkbox("shapes on edges", "toggle-shapes", false, actions.showShapes),
      checkbox("parameters", "toggle-params", false, actions.showParams),
      h("span", "lens-sep"),
      searchBox,
      button("SVG", "export-svg", "Download what is on screen as an SVG (vector, labels as text)", actions.exportSvg),
      h("span", "lens-spacer"),
      this.status,
    );
  }

  showView(view: ViewName): void {
    for (const v of ["unrolled", "rolled"] as ViewName[]) this.viewBtns[v].setAttribute("aria-pressed", String(v === view));
  }

  showTitle(modelClass: string | null, nOps: number): void {
    if (modelClass === null) this.title.textContent = "no graph";
    else this.title.replaceChildren(modelClass, h("small", "", `${nOps.toLocaleString("en-US")} ops`));
  }

  showStatus(text: string): void {
    this.status.textContent = text;
  }
}

function button(label: string, testid: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = h("button", "lens-btn", label);
  b.dataset.testid = testid;
  b.title = title;
  b.onclick = () => onClick();
  return b;
}

function checkbox(label: string, testid: string, on: boolean, onChange: (on: boolean) => void): HTMLLabelElement {
  const l = h("label", "lens-check");
  const c = document.createElement("input");
  c.type = "checkbox";
  c.checked = on;
  c.dataset.testid = testid;
  c.onchange = () => onChange(c.checked);
  l.append(c, label);
  return l;
}
