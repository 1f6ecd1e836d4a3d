"""`lw.Monitor`: traced training steps and every op's statistics over them."""

from lens_widget.capture.monitor.monitor import Monitor

__all__ = ["Monitor"]
