"""Honest NaN/Inf marks (#24 item 7), on real traced models behind the real request handler:
T5's log(0) in its relative-position buckets, masked away later, gets the quieter mark and a
legend and inspector that say so; a NaN that reaches the output keeps the red corner."""

from __future__ import annotations

import pytest
from lens_harness import lens, open_widget, wait_idle, widget_kernel

pytest.importorskip("transformers")

from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo import t5  # noqa: E402
from model_zoo.nonfinite import nonfinite_heads  # noqa: E402


def _marks(page) -> dict[str, tuple[bool, bool]]:
    """Every visible item with a NaN/Inf mark: (flagged, quiet)."""
    return page.evaluate(
        """() => { const l = window.__el.__lens; const out = {};
          for (const id of l.visibleIds) if (l.overlayFlagged(id))
            out[id] = [true, l.overlayQuietFlagged(id)];
          return out; }"""
    )


def _open_op(page, label: str) -> str:
    page.fill("[data-testid=search]", label)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == label
    note = page.locator("[data-testid=nonfinite-reach]")
    note.wait_for()
    return note.inner_text()


def test_t5_masked_log_gets_the_quiet_mark_and_says_why(page, artifacts) -> None:
    case = t5()
    widget = LensWidget(case.model, case.args, case.kwargs)
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    legend = page.locator("[data-testid=legend-nonfinite-masked]")
    legend.wait_for()
    assert legend.inner_text() == "NaN/Inf masked later (never reaches the output)"
    assert page.locator("[data-testid=legend-nonfinite]").count() == 0  # nothing red
    page.wait_for_function(
        "() => window.__el.__lens.visibleIds.some(i => window.__el.__lens.overlayFlagged(i))"
    )
    marks = _marks(page)
    assert marks and all(quiet for _, quiet in marks.values())
    page.screenshot(path=str(artifacts / "t5_quiet_marks.png"))
    # "first NaN/Inf" finds T5's log and says it is masked later
    page.click("text=first NaN/Inf")
    first = next(op.label for op in widget.model_log.ops if op.func == "log")
    page.wait_for_function(
        "(id) => document.body.innerText.includes('first NaN/Inf: ' + id + ' (masked later')",
        arg=first,
    )
    log_op = next(op.label for op in widget.model_log.ops if op.func == "log")
    text = _open_op(page, log_op)
    assert "masked away later" in text and "never reach the model's output" in text
    assert _marks(page)[log_op] == [True, True]
    assert page.errors == []


def test_a_nan_that_reaches_the_output_keeps_the_red_corner(page) -> None:
    case = nonfinite_heads()
    widget = LensWidget(case.model, case.args)
    leaking, masked = [op.label for op in widget.model_log.ops if op.func == "log"]
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    page.locator("[data-testid=legend-nonfinite-masked]").wait_for()
    assert page.locator("[data-testid=legend-nonfinite]").inner_text() == "NaN/Inf output"
    marks = _marks(page)
    assert marks[leaking] == [True, False]
    assert marks[masked] == [True, True]
    assert "reach the model's output" in _open_op(page, leaking)
    assert page.errors == []
