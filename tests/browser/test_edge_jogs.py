"""Clean edges (issue 24, item 17): an edge that enters an open module goes straight down
through its header, beside the title, without the small S-shaped jog it used to make
there (right of the title, then back under the header). Real traced models, every module
open, in the plain page harness.
"""

from __future__ import annotations

from typing import Any

import pytest
from lens_harness import lens, open_widget, wait_idle

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget.payload import build_payload  # noqa: E402
from model_zoo import TEST_MODELS  # noqa: E402

BOX_HEADER, BOX_PAD = 22, 12  # js/src/layout/labels.ts
TITLE_GAP = 6  # js/src/layout/headers.ts


def zoo_payload(name: str) -> dict[str, Any]:
    case = TEST_MODELS[name]()
    with torch.no_grad():
        return build_payload(lw.trace(case.model, case.args, case.kwargs, save=None))


def jogs(geo: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Edges that step sideways around a box's title as they enter it: a sideways segment
    between just above its top border and the padding under its header, whose end lies
    under the title (the edge went down beside the title, then back under it)."""
    found = []
    for e in geo["edges"]:
        if e["curve"]:
            continue
        pts = e["pts"]
        segs = [(pts[i], pts[i + 1], pts[i + 2], pts[i + 3]) for i in range(0, len(pts) - 2, 2)]
        for b in geo["boxes"]:
            t = b["title"]
            if t is None:
                continue
            top, bottom = b["y"] - 7, b["y"] + BOX_HEADER + BOX_PAD
            under_title = (t["x"] - TITLE_GAP, t["x"] + t["w"] + TITLE_GAP)
            for x0, y0, x1, y1 in segs:
                sideways = abs(x1 - x0) > 1.5
                within = top <= y0 <= bottom and top <= y1 <= bottom
                if sideways and within and under_title[0] < x1 < under_title[1]:
                    found.append((e["source"], e["target"], b["key"]))
                    break
    return found


@pytest.mark.parametrize("model", ["gpt2", "bert", "resnet"])
def test_no_jog_where_an_edge_enters_a_module(page, model, artifacts) -> None:
    open_widget(page, zoo_payload(model))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    geo = lens(page, "sceneGeometry()")
    entering = [
        e
        for e in geo["edges"]
        if any(b["y"] < e["pts"][-1] for b in geo["boxes"]) and not e["curve"]
    ]
    assert len(entering) > 10
    page.screenshot(path=str(artifacts / f"edge_jogs_{model}.png"))
    assert jogs(geo) == []
    assert page.errors == []
