"""Every output of a module, on its box, in its inspector and its plot (issue 36 item 2), on
the plain-torch detector (model_zoo.detection) and a tiny Mixtral behind the real request
handler (plain page harness): `roi_heads.box_predictor` returns class logits (150, 5) and box
deltas (150, 20), and its box, its inspector's list and its picker all say both; the
backbone's dict of levels is listed by key; the router's 3 tensors are 3 outputs; the
detector's list of dicts shows its outputs as boxes, labels, scores."""

from __future__ import annotations

import pytest
from lens_harness import lens, open_widget, reveal, wait_idle, widget_kernel

pytest.importorskip("transformers")

from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo.detection import faster_rcnn_like  # noqa: E402
from model_zoo.moe import mixtral  # noqa: E402

ACTIVATION = "[data-testid=activation]"


@pytest.fixture(scope="module")
def detector() -> LensWidget:
    case = faster_rcnn_like()
    return LensWidget(case.model, case.args, case.kwargs)


def open_module(page, query: str, title: str) -> None:
    """The module inspector of `query`, found by search as a person would."""
    page.fill("[data-testid=search]", query)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert page.inner_text("[data-testid=module-title]") == title
    page.locator("[data-testid=module-outputs]").wait_for()


def listed_outputs(page) -> list[tuple[str, str]]:
    """(path, button text) of each output the module inspector lists."""
    pairs = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid=module-outputs] button')]
            .map((b) => [b.dataset.path, b.innerText])"""
    )
    return [(path, text) for path, text in pairs]


def plotted(page, text: str) -> None:
    page.locator(ACTIVATION).filter(has_text=text).wait_for()
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()


def test_a_head_returning_two_tensors_shows_both_everywhere(page, detector, artifacts) -> None:
    open_widget(page, detector.graph, python_kernel=widget_kernel(detector))
    log = detector.model_log
    fc6 = next(op.label for op in log.ops if op.module == "roi_heads.box_head.fc6")
    reveal(page, fc6)  # opens roi_heads: box_predictor is a closed box beside box_head
    lines = lens(page, "itemLines('@roi_heads.box_predictor:1')")
    assert lines is not None and lines[-1].endswith("→ 150×5, 150×20"), lines

    open_module(page, "box_predictor", "roi_heads.box_predictor")
    assert listed_outputs(page) == [("0", "0 (150, 5)"), ("1", "1 (150, 20)")]
    plotted(page, "(150, 5) float32")  # the first output, class logits
    page.select_option("[data-testid=module-output-picker]", "1")
    plotted(page, "(150, 20) float32")  # the box deltas, picked
    page.locator("[data-testid=inspector]").screenshot(path=str(artifacts / "box_predictor.png"))

    # the backbone's body returns an OrderedDict of levels: each by its key, box and list alike
    open_module(page, "backbone.body", "backbone.body")
    assert listed_outputs(page) == [("0", "0 (1, 16, 16, 16)"), ("1", "1 (1, 32, 8, 8)")]
    open_module(page, "backbone.fpn", "backbone.fpn")
    assert [path for path, _ in listed_outputs(page)] == ["0", "1", "pool"]
    assert page.errors == []


def test_a_list_of_dicts_output_is_named_by_its_keys(page, detector) -> None:
    open_widget(page, detector.graph, python_kernel=widget_kernel(detector))
    lines = lens(page, "itemLines('@output.0')")
    assert lines is not None and lines[0] == "boxes, labels, scores", lines
    # roi_heads returns the same list of dicts (before postprocess rescales its boxes)
    open_module(page, "roi_heads", "roi_heads")
    assert [path for path, _ in listed_outputs(page)] == ["0.boxes", "0.labels", "0.scores"]
    assert page.errors == []


def test_a_router_lists_its_three_tensors(page) -> None:
    case = mixtral()
    w = LensWidget(case.model, case.args, case.kwargs)
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    gate = next(a for a, m in w.model_log.modules.items() if m.class_name == "MixtralTopKRouter")
    open_module(page, gate, gate)
    outputs = listed_outputs(page)
    assert [path for path, _ in outputs] == ["0", "1", "2"]
    assert [text.split(" ", 1)[1] for _, text in outputs] == ["(12, 4)", "(12, 2)", "(12, 2)"]
    plotted(page, "(12, 4) float32")
    page.select_option("[data-testid=module-output-picker]", "2")
    plotted(page, "(12, 2) int64")  # the chosen experts: topk's indices, its output 1
    # one picker: the op's own (values or indices) is not offered beside the module's
    assert page.locator("[data-testid=output-picker]").count() == 0
    assert page.errors == []
