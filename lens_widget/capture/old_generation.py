"""Hand the objects a trace made to Python's oldest gc generation without scanning them.

A trace makes tens of thousands of small objects while the collector is paused (records,
templates, references to tensors). The first collection after it would scan them all at
once (20-30 ms for a 3,000-op trace, more than the tracing itself), and the next two
generations would scan them again, although they form no cycles and live as long as the
log. gc.freeze() + gc.unfreeze() moves every tracked object into the oldest generation in
constant time; it is done only when nothing is frozen already (a pre-fork server's freeze
is left alone).

The promotion takes every young object, not only the trace's: garbage that the code before
the trace left for the collector (a closed widget's class, which traitlets makes per
widget; any cycle of the user's) would then wait for a rare full collection, and repeated
traces grew the process with it. So the young generations are collected when the trace
starts, while they hold only what was made since the last collection (cheap).
"""

from __future__ import annotations

import gc


def collect_young_generations() -> None:
    """Free the young garbage made before a trace, so the promotion hands over only the
    trace's objects (left to the user when they turned the collector off)."""
    if gc.isenabled():
        gc.collect(1)


def promote_to_old_generation() -> None:
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
