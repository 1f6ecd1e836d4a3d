"""The Jupyter widget: LensWidget and the pieces it is built from; the monitor view and the
rank view in their folders (monitor/, ranks/)."""

from lens_widget.widget.lens_widget import LensWidget

__all__ = ["LensWidget"]
