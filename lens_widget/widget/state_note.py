"""What a widget's output says when its graph cannot come back after a reopen.

JupyterLab saves widget state only with "Save Widget State Automatically" on (off by default);
without it, a reopened notebook's widget output reads "Error displaying widget: model not
found" and its renderer falls back to no other MIME type. So a widget is displayed with a
second output, this note, saying how to keep the graph; the widget's CSS hides the note
whenever the widget itself is drawn just above it (live, or restored from a saved state), so
only a notebook that lost its graph shows it. Where no widget manager runs at all (nbconvert's
HTML of a notebook without widget state, GitHub) the note is shown in the widget's place.
"""

from __future__ import annotations

NOTE_CLASS = "lens-state-note"

STATE_NOTE_HTML = (
    f'<div class="{NOTE_CLASS}" style="font:13px/1.4 system-ui,sans-serif;color:#52606d">'
    "No lens_widget graph above (&ldquo;Error displaying widget: model not found&rdquo;)? "
    "This notebook was saved without its widget state: run the cell again to see it. To keep "
    "graphs in saved notebooks, turn on <b>Settings › Save Widget State Automatically</b> in "
    "JupyterLab before saving, or display them with <code>lens_widget.show(w)</code>, which "
    "keeps the graph as plain HTML in the notebook."
    "</div>"
)

# Hides the note that follows a drawn widget's output (JupyterLab, Notebook 7 and nbconvert's
# pages put each output in a .jp-OutputArea-child, the classic notebook in an .output_area);
# injected with the widget's own code. Elsewhere the note stays, worded to read right anyway.
STATE_NOTE_CSS = "".join(
    f'{area}:has([data-testid="lens-root"]) + {area} .{NOTE_CLASS} {{ display: none; }}\n'
    for area in (".jp-OutputArea-child", ".output_area")
)
