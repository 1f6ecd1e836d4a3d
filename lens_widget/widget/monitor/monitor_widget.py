"""``Monitor.widget()`` (capture/monitor/ FACADE): the live monitor view of a LensWidget."""

from __future__ import annotations

from lens_widget.capture.monitor.monitor import Monitor
from lens_widget.widget.lens_widget import LensWidget


def monitor_widget(monitor: Monitor) -> LensWidget:
    """A LensWidget showing `monitor`'s history, following new steps as they arrive."""
    return LensWidget.from_monitor(monitor)
