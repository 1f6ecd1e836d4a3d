"""Talk to a LensWidget's request handler as the frontend does, without a comm."""

from __future__ import annotations

from lens_widget.widget import LensWidget


def ask(widget: LensWidget, method: str, params: object) -> tuple[dict, list]:
    """The one reply (message, buffers) the widget sends to one request."""
    sent: list[tuple[dict, list]] = []
    widget.send = lambda msg, buffers=None: sent.append((msg, list(buffers or [])))
    try:
        widget._on_msg(widget, {"type": "request", "id": 3, "method": method, "params": params}, [])
    finally:
        del widget.send
    assert len(sent) == 1
    return sent[0]


class Replies:
    """Stands in for the comm: collects what the widget sends back."""

    def __init__(self, widget: LensWidget) -> None:
        self.sent: list[tuple[dict, list]] = []
        widget.send = lambda content, buffers=None: self.sent.append((content, buffers or []))
        self.widget = widget

    def ask(self, method, params, req_id=1):
        msg = {"type": "request", "id": req_id, "method": method, "params": params}
        self.widget._on_msg(self.widget, msg, [])
        return self.sent[-1]
