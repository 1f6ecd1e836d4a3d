"""lens_widget: see everything a PyTorch model does in one forward pass."""

from __future__ import annotations

from lens_widget.capture.monitor.monitor import Monitor
from lens_widget.capture.offload.offload import OffloadError
from lens_widget.capture.partial_log import partial_log
from lens_widget.capture.trace import trace
from lens_widget.capture.tracing import Tracing, tracing
from lens_widget.compare import LogComparison, OpDiff, compare
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord, ParamUse, ParentArg
from lens_widget.log.stats import ActivationStats
from lens_widget.log.totals import ModuleTotals
from lens_widget.log.validate import ValidationError, ValidationReport
from lens_widget.store.format import LogFormatError
from lens_widget.store.load import load
from lens_widget.store.monitor.monitor_file import load_history as load_monitor
from lens_widget.store.ranks.ranks import MissingRanksWarning, load_ranks

__all__ = [
    "LogFormatError",
    "ActivationStats",
    "LogComparison",
    "ModelLog",
    "ModuleTotals",
    "Monitor",
    "OffloadError",
    "OpDiff",
    "OpRecord",
    "ParamUse",
    "ParentArg",
    "ValidationError",
    "ValidationReport",
    "load",
    "load_monitor",
    "load_ranks",
    "MissingRanksWarning",
    "compare",
    "partial_log",
    "trace",
    "tracing",
    "Tracing",
]


def __getattr__(name: str) -> object:
    # The widget pulls in anywidget/ipywidgets: import it only when asked for.
    if name == "LensWidget":
        from lens_widget.widget import LensWidget

        return LensWidget
    if name == "show":
        from lens_widget.widget.show import show

        return show
    raise AttributeError(f"module 'lens_widget' has no attribute {name!r}")
