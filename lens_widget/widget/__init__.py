"""The Jupyter widget: LensWidget and the pieces it is built from."""

from lens_widget.widget.lens_widget import LensWidget

__all__ = ["LensWidget"]
