"""lens_widget: see everything a PyTorch model does in one forward pass."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lens_widget.capture.partial_log import partial_log
from lens_widget.capture.trace import trace
from lens_widget.capture.tracing import Tracing, tracing
from lens_widget.compare import LogComparison, OpDiff, compare
from lens_widget.log.model_log import ModelLog, register_html_writer
from lens_widget.log.records import OpRecord, ParamUse, ParentArg
from lens_widget.log.stats import ActivationStats
from lens_widget.log.totals import ModuleTotals
from lens_widget.log.validate import ValidationError, ValidationReport
from lens_widget.store.format import LogFormatError
from lens_widget.store.load import load

if TYPE_CHECKING:
    import os
    from pathlib import Path

__all__ = [
    "LogFormatError",
    "ActivationStats",
    "LogComparison",
    "ModelLog",
    "ModuleTotals",
    "OpDiff",
    "OpRecord",
    "ParamUse",
    "ParentArg",
    "ValidationError",
    "ValidationReport",
    "load",
    "compare",
    "partial_log",
    "trace",
    "tracing",
    "Tracing",
]


def _write_html(log: ModelLog, path: str | os.PathLike[str], max_bytes: int, weights: bool) -> Path:
    # ModelLog.to_html: the page embeds the widget, imported only when a page is written.
    from lens_widget.widget.html_export import write_log_html

    return write_log_html(log, path, max_bytes=max_bytes, weights=weights)


register_html_writer(_write_html)


def __getattr__(name: str) -> object:
    # The widget pulls in anywidget/ipywidgets: import it only when asked for.
    if name == "LensWidget":
        from lens_widget.widget import LensWidget

        return LensWidget
    raise AttributeError(f"module 'lens_widget' has no attribute {name!r}")
