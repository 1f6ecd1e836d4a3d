"""Hand the objects a trace made to Python's oldest gc generation without scanning them.

A trace makes tens of thousands of small objects while the collector is paused (records,
templates, references to tensors). The first collection after it would scan them all at
once (20-30 ms for a 3,000-op trace, more than the tracing itself), and the next two
generations would scan them again, although they form no cycles and live as long as the
log. gc.freeze() + gc.unfreeze() moves every tracked object into the oldest generation in
constant time; it is done only when nothing is frozen already (a pre-fork server's freeze
is left alone).
"""

from __future__ import annotations

import gc


def promote_to_old_generation() -> None:
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
