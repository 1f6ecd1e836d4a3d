"""The inspector's facts of a multi-output op follow the output picked: torch.topk's indices
are int64 and an LSTM's h_n has its own shape (plain page, fixtures/lens_harness.py)."""

from __future__ import annotations

import pytest
from lens_harness import click_item, open_widget, wait_idle, widget_kernel

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import lens_widget as lw  # noqa: E402
from lens_widget.widget import LensWidget  # noqa: E402


class _TopkOfLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, _) = self.lstm(x)
        values, indices = torch.topk(out, 3, dim=-1)
        return values.sum() + h.sum() + indices.float().mean()


def facts(page) -> dict[str, str]:
    """The inspector's table of facts, as read: {"shape": "(2, 7, 3)", "dtype": ...}."""
    rows = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid=inspector] .lens-facts tr')]
            .filter((tr) => !tr.hidden)
            .map((tr) => [tr.cells[0].innerText, tr.cells[1].innerText])"""
    )
    return {k: v for k, v in rows if k in ("output", "shape", "dtype", "size")}


def pick_output(page, index: int, expect: str) -> None:
    page.select_option("[data-testid=output-picker]", str(index))
    page.locator("[data-testid=activation]").filter(has_text=expect).wait_for()


def test_the_facts_follow_the_output_picked(page) -> None:
    torch.manual_seed(0)
    w = LensWidget(_TopkOfLstm(), (torch.randn(2, 7, 16),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    topk = next(o.label for o in w.model_log.ops if o.func == "topk")
    click_item(page, topk)
    page.locator("[data-testid=output-picker]").wait_for()
    pick_output(page, 1, "(2, 7, 3) int64")
    # the sizes of values (168 B) and indices (336 B) add up to the op's
    assert facts(page) == {
        "output": "1 of 2", "shape": "(2, 7, 3)", "dtype": "int64", "size": "504 B, all 2 outputs"
    }  # fmt: skip
    pick_output(page, 0, "(2, 7, 3) float32")
    assert facts(page)["dtype"] == "float32"
    assert facts(page)["output"] == "0 of 2"

    lstm = next(o.label for o in w.model_log.ops if o.func == "lstm")
    click_item(page, lstm)
    page.locator("[data-testid=activation]").filter(has_text="(2, 7, 32) float32").wait_for()
    assert facts(page)["shape"] == "(2, 7, 32)"
    pick_output(page, 1, "(2, 2, 32) float32")  # h_n: (layer, batch, feature)
    assert facts(page)["shape"] == "(2, 2, 32)"
    assert facts(page)["output"] == "1 of 3"

    # a single-output op shows its own facts, and no output row
    click_item(page, next(o.label for o in w.model_log.ops if o.func == "float"))
    page.locator("[data-testid=activation]").filter(has_text="(2, 7, 3) float32").wait_for()
    assert facts(page) == {"shape": "(2, 7, 3)", "dtype": "float32", "size": "168 B"}
    assert page.errors == []


def test_the_output_picked_stays_picked_on_the_other_side_and_pass(page) -> None:
    """h_n picked, then B (or another pass of the layer) asked for: still h_n, not output 0."""
    torch.manual_seed(0)
    lstm = nn.LSTM(4, 8, batch_first=True)

    def run(x: torch.Tensor) -> lw.ModelLog:
        return lw.trace(nn.Sequential(lstm), x)

    w = LensWidget.compare(run(torch.randn(2, 5, 4)), run(torch.randn(2, 5, 4)))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, next(o.label for o in w.model_log.ops if o.func == "lstm"))
    page.locator("[data-testid=output-picker]").wait_for()
    pick_output(page, 1, "(1, 2, 8) float32")
    page.select_option("[data-testid=compare-side]", "b")
    page.wait_for_function(
        "() => window.__fake.log.sent.some(m => m.params && m.params.side === 'b')"
    )
    page.locator("[data-testid=activation]").filter(has_text="(1, 2, 8) float32").wait_for()
    sent = page.evaluate("() => window.__fake.log.sent.filter(m => m.params?.side === 'b')")
    assert [m["params"].get("output") for m in sent] == [1]
    assert page.locator("[data-testid=output-picker]").input_value() == "1"
    assert facts(page)["output"] == "1 of 3"
    assert page.errors == []
