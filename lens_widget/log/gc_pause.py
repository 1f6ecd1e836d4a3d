"""Pause Python's cyclic garbage collector while building many small objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Each op or graph node allocates a few objects; the collector would rescan all of them
    again and again (quadratic in op count). Nothing built here forms cycles to collect."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
