"""`ModelLog.nodes` and `ModelLog.modules`, whose details a trace may leave to be filled on
the first read.

A plain trace leaves its records' labels, their links to their parents, source lines and
output metadata, which ops feed the output, and the labels of each module call's outputs,
which nothing of the trace itself reads, to the first time anything reads the records or
the modules: `ModelLog.nodes`, `ModelLog.modules`, or the label index behind ``log[...]``
and ``log.by_label``. Those are
the only ways to a record, so no one sees a record half-filled; the trace returns sooner,
and reading the log pays for the fill once (issues #27 and #37: work moved out of the trace,
the log a user reads the same).

Filling runs once: a second thread reading meanwhile waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_LATER = "_details_later"  # the pending fill, in the log's __dict__ until it has run


class DetailsLater:
    """The fill a trace left for the first read (a callable that takes nothing)."""

    __slots__ = ("_fill", "_lock")

    def __init__(self, fill: Callable[[], None]) -> None:
        self._fill: Callable[[], None] | None = fill
        self._lock = threading.Lock()

    def run(self) -> None:
        with self._lock:
            fill, self._fill = self._fill, None
            if fill is not None:
                fill()


def fill_later(log: Any, fill: Callable[[], None]) -> None:
    """Run `fill` before anything reads `log`'s records (see the module doc)."""
    log.__dict__[_LATER] = DetailsLater(fill)


class FilledOnRead:
    """A dataclass field (no default) whose value is read only after the fill left for
    later has run."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_value"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # on the class: no default value for the dataclass field
            raise AttributeError(self._slot)
        attributes = obj.__dict__
        later = attributes.get(_LATER)
        if later is not None:
            later.run()
            attributes.pop(_LATER, None)
        return attributes[self._slot]

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self._slot] = value
