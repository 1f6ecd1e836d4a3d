"""A re-run keeps the call sites of the trace the user made.

An op with no user code between it and the model's call (the layers of an `nn.Sequential`)
is located at the line that called the model. A re-run or an ablation calls the model from
the widget's message handler (in Jupyter, a line of ipywidgets), so its own call sites would
point there; labels are stable across runs, so the first trace's sites carry over by label.
"""

from __future__ import annotations

from lens_widget.log.model_log import ModelLog


def keep_call_sites(rerun: ModelLog, first: ModelLog) -> ModelLog:
    """`rerun` with each node's `source` and `source_code` taken from `first`'s node of the
    same label (nodes `first` lacks keep their own)."""
    before = first.by_label
    for node in rerun.nodes:
        old = before.get(node.label)
        if old is not None:
            node.source, node.source_code = old.source, old.source_code
    return rerun
