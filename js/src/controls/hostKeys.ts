// Keys typed into the widget's own form controls stay there. JupyterLab and Notebook 7 run
// their command-mode shortcuts on keydown bubbling up to the document, and take only text
// fields (:read-write) for typing: in a focused select or slider, ArrowDown moved to the next
// cell instead of the next option, and "m" (type-ahead for "mean") turned the widget's cell
// into markdown, deleting the widget. Keys with Ctrl/⌘/Alt (save, ...) still reach the host.
const TAKES_KEYS = "select, input, textarea";

/** Stops plain keydowns from leaving the form controls inside `root`. */
export function keepKeysInControls(root: HTMLElement): void {
  root.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target instanceof Element && ev.target.closest(TAKES_KEYS)) ev.stopPropagation();
  });
}
