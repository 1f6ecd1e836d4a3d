"""The standalone page of a LensWidget and how it shows in a notebook's output: `save_html`
(one self-contained HTML file), the page `lw.show` embeds, and the widget's display with the
note a notebook saved without widget state shows instead (state_note.py).

A mixin of LensWidget, apart from the widget's tracing and requests: everything here reads
the widget as it is now and writes nothing back.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

from IPython.display import display

from lens_widget.compare.comparison import OpDiff
from lens_widget.log.model_log import DEFAULT_HTML_BYTES, ModelLog
from lens_widget.widget import html_export
from lens_widget.widget.state_note import STATE_NOTE_HTML


class PageOutput:
    """What LensWidget adds to show itself: `save_html`, `_page` (lw.show), the display."""

    _model_log: ModelLog  # LensWidget's
    _diffs: dict[str, OpDiff] | None
    get_state: Any  # ipywidgets'
    _repr_mimebundle_: Any  # anywidget's; None once closed

    def save_html(
        self,
        path: str | os.PathLike[str],
        max_bytes: int = DEFAULT_HTML_BYTES,
        *,
        weights: bool = False,
    ) -> pathlib.Path:
        """Write this widget as one self-contained HTML page: it opens in any browser with no
        Jupyter and no network, as interactive as here (expand, collapse, rolled/unrolled,
        search), in the view, expansion, selection and height shown now. Clicking an op plots its
        activation from views embedded in the page, pooled (or, past that, left out, which
        the page says) so that the file stays under `max_bytes`. `weights=True` adds plots of
        parameters and buffers (slower: their statistics read every weight). Returns the path.
        """
        out = pathlib.Path(path)
        out.write_bytes(self._page(max_bytes, weights=weights).html)
        return out

    def _page(self, max_bytes: int, *, weights: bool) -> html_export.Page:
        """The standalone page of this widget as it is now (save_html, lw.show)."""
        state = self.get_state(["graph", "view", "selected", "expanded", "height"])
        return html_export.render_page(
            self._model_log, state, max_bytes=max_bytes, weights=weights, diffs=self._diffs
        )

    def _ipython_display_(self) -> None:
        # The widget, then a note that shows only where the widget cannot be drawn: a
        # reopened notebook saved without widget state (state_note.py).
        repr_bundle = self._repr_mimebundle_  # None once closed (ipywidgets' close)
        bundle = repr_bundle() if repr_bundle is not None else None
        if bundle is None:  # closed: no view, only the text (as anywidget shows it)
            display({"text/plain": repr(self)}, raw=True)
            return
        data, metadata = bundle
        display(data, metadata=metadata, raw=True)
        display({"text/html": STATE_NOTE_HTML}, raw=True)
