"""`ModelLog.nodes`, `ModelLog.modules` and the gradient fields, whose details a trace may
leave to be filled on the first read.

A plain trace leaves its records' labels, their links to their parents, source lines and
output metadata, which ops feed the output, and the labels of each module call's outputs,
which nothing of the trace itself reads, to the first time anything reads the records or
the modules: `ModelLog.nodes`, `ModelLog.modules`, or the label index behind ``log[...]``
and ``log.by_label``. A section nothing reads as it ends (``lw.tracing``, with the
gradients alone among its features) leaves the same, and its gradient records, which name
ops by label (``log.leaves``, ``log.backward_passes``, ``log.recomputed``; the backward
graph waits too, graph_on_read.py). Those are the only ways to a record, so no one sees a
record half-filled; the trace returns sooner, and reading the log pays for the fill once
(issues #27 and #37: work moved out of the trace, the log a user reads the same).

Filling runs once: a second thread reading meanwhile waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_LATER = "_details_later"  # the pending fill, in the log's __dict__ until it has run


class DetailsLater:
    """The fills a trace left for the first read (callables that take nothing), run in the
    order they were left."""

    __slots__ = ("_fills", "_lock")

    def __init__(self, fill: Callable[[], None]) -> None:
        self._fills: list[Callable[[], None]] = [fill]
        self._lock = threading.Lock()

    def then(self, fill: Callable[[], None]) -> bool:
        """Leave `fill` to run after the others; False when they have run (run it now)."""
        with self._lock:
            if not self._fills:
                return False
            self._fills.append(fill)
            return True

    def run(self) -> None:
        with self._lock:
            fills, self._fills = self._fills, []
            for fill in fills:
                fill()


def fill_later(log: Any, fill: Callable[[], None]) -> None:
    """Run `fill` before anything reads `log`'s records (see the module doc)."""
    log.__dict__[_LATER] = DetailsLater(fill)


def fill_after(log: Any, fill: Callable[[], None]) -> None:
    """Run `fill` right after the fill left for `log`'s first read, or now when none is
    left (a traced training step's gradients, which name the records' final labels)."""
    later = log.__dict__.get(_LATER)
    if later is None or not later.then(fill):
        fill()


def run_pending_fill(obj: Any) -> None:
    """Run the fill left for `obj`'s first read, if any (every reader of a filled field)."""
    attributes = obj.__dict__
    later = attributes.get(_LATER)
    if later is not None:
        later.run()
        attributes.pop(_LATER, None)


class FilledOnRead:
    """A dataclass field whose value is read only after the fill left for later has run.
    Without `empty` it has no default; with one (dict, list) its default is None, read as a
    new empty value."""

    def __init__(self, empty: Callable[[], Any] | None = None) -> None:
        self._empty = empty

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_value"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # on the class: the dataclass default (None), or none
            if self._empty is None:
                raise AttributeError(self._slot)
            return None
        attributes = obj.__dict__
        if _LATER in attributes:
            run_pending_fill(obj)
        value = attributes[self._slot]
        if value is None and self._empty is not None:
            value = attributes[self._slot] = self._empty()
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self._slot] = value
