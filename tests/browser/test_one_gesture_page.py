"""One gesture to the op, and a first view that uses its room (#36 item 6), on a tiny wav2vec2:
the first screen opens more than the top-level boxes while it fits at 70% or more (it showed 7
boxes at 100%, half the canvas empty), and a double click on the encoder goes down through its
×N stack to the first layer's contents, where one click showed a closed "×2" stack."""

from __future__ import annotations

import pytest
from lens_harness import item_pos, lens, open_widget, wait_idle, widget_kernel

pytest.importorskip("transformers")

from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo.audio import wav2vec2  # noqa: E402


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    case = wav2vec2()
    return LensWidget(case.model, case.args)


def test_the_first_view_opens_more_while_it_fits_at_70_percent(page, widget, artifacts) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=1340)
    zoom = lens(page, "camera")["scale"]
    shown = lens(page, "visibleCount")
    top = [m for m in widget.graph["modules"] if m["parent"] == "" and m.get("kind") is None]
    assert zoom >= 0.7, zoom
    assert len(lens(page, "expanded")) >= 1 and shown > len(top) + 3, shown
    page.screenshot(path=str(artifacts / "wav2vec2_first_screen.png"))
    assert page.errors == []


def test_a_double_click_on_the_encoder_goes_down_to_the_first_layers_contents(page, widget) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=1340)
    # the encoder if the first screen left it closed, else its ×2 stack of layers
    closed = [k for k in ("@encoder:1", "@encoder.layers.0×2") if item_pos(page, k) is not None]
    assert closed, "neither the encoder nor its layers are a closed box on the first screen"
    pos = item_pos(page, closed[0])
    page.mouse.dblclick(pos["x"], pos["y"])
    wait_idle(page)
    page.wait_for_timeout(300)
    wait_idle(page)
    expanded = set(lens(page, "expanded"))
    assert "encoder" in expanded and "encoder.layers.0" in expanded, expanded
    assert "encoder.layers.1" not in expanded
    # the first layer's own modules are on screen, its attention one click from its ops
    assert item_pos(page, "@encoder.layers.0.attention:1") is not None
    assert page.errors == []
