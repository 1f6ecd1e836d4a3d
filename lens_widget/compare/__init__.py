"""Compare two traces op by op. Reads logs only (never the tracer or the widget)."""

from lens_widget.compare.comparison import LogComparison, OpDiff, compare
from lens_widget.compare.tensor_diff import ValueDiff

__all__ = ["LogComparison", "OpDiff", "ValueDiff", "compare"]
