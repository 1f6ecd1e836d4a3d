"""`lw.show`: a trace as plain HTML output, so a saved notebook keeps an interactive graph.

A widget's graph lives in the kernel and, after a reopen, only in the widget state JupyterLab
saves when "Save Widget State Automatically" is on (off by default). `show` instead puts the
standalone page (html_export.py, what `to_html` writes) in the output itself, inside an
`<iframe srcdoc>`: the page's scripts run in a frame of their own (its element ids and styles
cannot clash with the notebook's or another page's), in JupyterLab, Notebook 7, nbconvert's
HTML and VS Code alike, with no kernel and no network. An untrusted notebook's HTML is
sanitized, which drops the frame and leaves its fallback text saying what to do.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from IPython.display import display

from lens_widget.log.model_log import ModelLog
from lens_widget.widget import html_export
from lens_widget.widget.html_export import Page
from lens_widget.widget.lens_widget import LensWidget

# What a notebook output may reasonably weigh: the bundle (~0.8 MB), the graph and some views.
DEFAULT_SHOW_BYTES = 3_000_000
# The frame's height until the page sizes it to its content (the page's own script).
FRAME_HEIGHT = 760
_UNTRUSTED = (
    "The interactive lens_widget graph of {model} is in this output, but this viewer does not "
    "run its HTML (an untrusted notebook, or a site that strips it): open the notebook in "
    "JupyterLab and trust it (File › Trust Notebook), run the cell again, or open an HTML "
    "export of the notebook (jupyter nbconvert --to html)."
)


@dataclass(frozen=True)
class InlinePage:
    """The standalone page of a trace, shown as a notebook output (`show`)."""

    page: Page
    model: str

    @property
    def note(self) -> str:
        """What the page holds, and what it left out to stay under its budget."""
        return self.page.note

    def _repr_html_(self) -> str:
        srcdoc = html.escape(self.page.html.decode("utf-8"), quote=True)
        fallback = html.escape(_UNTRUSTED.format(model=self.model))
        return (
            '<div class="lens-show">'
            f'<iframe class="lens-show-frame" srcdoc="{srcdoc}" '
            f'title="{html.escape(self.model, quote=True)} — lens_widget" '
            f'style="width:100%;height:{FRAME_HEIGHT}px;border:0;display:block">'
            f"{fallback}</iframe></div>"
        )

    def __repr__(self) -> str:  # what display() prints outside IPython, not the whole page
        return f"lens_widget page: {self.note}"

    def _repr_mimebundle_(self, **_kwargs: Any) -> dict[str, str]:
        return {"text/html": self._repr_html_(), "text/plain": repr(self)}


def inline_page(
    target: ModelLog | LensWidget, max_bytes: int = DEFAULT_SHOW_BYTES, *, weights: bool = False
) -> InlinePage:
    """The page `show` displays, with its HTML (frame and all) at most `max_bytes`."""
    if isinstance(target, LensWidget):
        log = target.model_log

        def render(budget: int) -> Page:
            return target._page(budget, weights=weights)
    elif isinstance(target, ModelLog):
        log = target
        state = html_export.log_state(log)

        def render(budget: int) -> Page:
            return html_export.render_page(log, state, max_bytes=budget, weights=weights)
    else:
        raise TypeError(f"show() takes a ModelLog or a LensWidget, not {type(target).__name__}")

    # The frame escapes the page's markup (a few kB, not its base64 data): render, measure
    # what the frame added, and render again that much smaller when it went over.
    budget, size = max_bytes, 0
    for _ in range(3):
        shown = InlinePage(render(budget), log.model_class)
        size = len(shown._repr_html_().encode("utf-8"))
        if size <= max_bytes:
            return shown
        budget -= size - max_bytes + 1024
    raise ValueError(f"max_bytes={max_bytes:,} cannot hold the page in its frame ({size:,} bytes)")


def show(
    target: ModelLog | LensWidget, max_bytes: int = DEFAULT_SHOW_BYTES, *, weights: bool = False
) -> None:
    """Display the interactive graph of `target` (a ModelLog, or a LensWidget in its present
    view, expansion and selection) as plain HTML output: it stays in the saved notebook and
    works with no kernel, in JupyterLab's default settings, nbconvert's HTML and anywhere
    HTML outputs render. The output holds at most `max_bytes` (default 3 MB): activations are
    pooled or left out to fit, and the page says which; `weights=True` adds parameters.

    Raises ValueError when `max_bytes` cannot hold even the graph without activations.
    """
    display(inline_page(target, max_bytes, weights=weights))
