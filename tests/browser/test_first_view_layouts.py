"""A first view is laid out no more often than its search needs, and not in the worker (#24's
first view, first paint): GPT-2 with 24 blocks folded in a 1240 px widget opens on its top
level at 70% (the level below is 0.499 too small); laying out the model as two boxes after that
decides nothing (it would lose to the legible level either way), and the few boxes of a first
view are laid out on the page's thread, not sent to a worker still starting (the worker gets
them after first paint, to be warm for the first click). Plain page harness.
"""

from __future__ import annotations

from typing import Any

import pytest
from gpt2_blocks import gpt2_payload
from lens_harness import lens, open_widget, wait_idle


@pytest.fixture(scope="module")
def gpt2_24() -> dict[str, Any]:
    """GPT-2 with 24 blocks of width 64 (random weights), folding into a ×24 stack."""
    return gpt2_payload(24)


def test_the_first_view_lays_out_two_levels_on_the_page(page, gpt2_24) -> None:
    open_widget(page, gpt2_24)
    # what the person sees: the model's top level open (the ×24 stack closed) at a legible 78%
    # (70% before its dropouts, which return their input, were folded away: #36)
    assert lens(page, "expanded") == ["lm_head", "transformer"]
    assert 0.7 <= lens(page, "scale") < 0.9
    # laid out: the default level (too tall), then this one; not the model as two boxes, and
    # all on the page (before: 4 layouts, 3 of them in the worker)
    runs = lens(page, "layoutRuns")
    assert (runs["all"], runs["worker"]) == (2, 0)
    assert lens(page, "layoutCount") == 1  # one placed: the first paint
    # after it, the worker lays the same out once, so its first real layout finds dagre compiled
    page.wait_for_function("() => window.__el.__lens.layoutRuns.warmups === 1")
    # and layouts go to the worker again
    page.get_by_test_id("expand-all").click()
    wait_idle(page)
    assert lens(page, "layoutRuns") == {"all": 3, "worker": 1, "warmups": 1}
    assert page.errors == []
