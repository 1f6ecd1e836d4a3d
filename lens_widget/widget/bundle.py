"""The frontend bundle (a build output in lens_widget/static/), as text for anywidget."""

from __future__ import annotations

import pathlib

STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"
# Without the bundle the package must still import and say why.
MISSING_ESM = (
    "export default { render({ el }) { el.textContent = "
    "'lens_widget frontend not built: run `make`'; } };"
)


def bundle_text(name: str, fallback: str) -> str:
    """The file's text. Not its path: anywidget turns a path into a file watcher and
    connects every widget to that class-wide watcher with a closure over the widget, which
    it never disconnects, so no widget would ever be freed (anywidget issue #929)."""
    path = STATIC / name
    return path.read_text(encoding="utf-8") if path.is_file() else fallback
