"""Headroom on the recursion limit while a trace runs.

Module calls add no frame under the tracer (module_tracker.py), but the mode's handler adds
a few at the deepest point of a forward. The limit is raised by that much while any trace
runs, so a model that nests as deep as a plain forward allows also traces, and put back
when the last one ends (unless the user's code changed it meanwhile).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()


class _Raised:
    active = 0
    original = 0
    raised_to = 0


@contextmanager
def recursion_headroom(extra: int) -> Iterator[None]:
    with _LOCK:
        if _Raised.active == 0:
            _Raised.original = sys.getrecursionlimit()
            _Raised.raised_to = _Raised.original + extra
            sys.setrecursionlimit(_Raised.raised_to)
        _Raised.active += 1
    try:
        yield
    finally:
        with _LOCK:
            _Raised.active -= 1
            if _Raised.active == 0 and sys.getrecursionlimit() == _Raised.raised_to:
                sys.setrecursionlimit(_Raised.original)
