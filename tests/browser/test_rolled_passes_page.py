"""The rolled view's pass picker: the inspector's facts are those of the pass picked (its
shape, its module and parameters in a folded block), and a view switch keeps that pass
selected (plain page, fixtures/lens_harness.py)."""

from __future__ import annotations

import pytest
from folding_blocks import two_folding_blocks
from lens_harness import click_item, lens, open_widget, wait_idle, widget_kernel

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from lens_widget.widget import LensWidget  # noqa: E402


class _Prefixes(nn.Module):
    """One Linear over ever longer prefixes: three passes of one layer, three shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.fc(x[:, :n]).sum(1) for n in (2, 5, 9)])


def facts(page) -> dict[str, str]:
    rows = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid=inspector] .lens-facts tr')]
            .filter((tr) => !tr.hidden)
            .map((tr) => [tr.cells[0].innerText, tr.cells[1].innerText])"""
    )
    return dict(rows)


def plotted(page, text: str) -> None:
    page.locator("[data-testid=activation]").filter(has_text=text).wait_for()


def test_the_facts_and_a_view_switch_follow_the_pass_picked(page) -> None:
    torch.manual_seed(0)
    w = LensWidget(_Prefixes(), (torch.randn(2, 9, 8),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    click_item(page, "linear_1_2")
    plotted(page, "(2, 2, 8) float32")
    page.select_option("[data-testid=pass-picker]", "2")
    plotted(page, "(2, 9, 8) float32")
    f = facts(page)
    assert (f["shape"], f["size"], f["module"]) == ("(2, 9, 8)", "576 B", "fc — pass 3 of 3")

    # to the unrolled view: the pass looked at is the op selected, and back again
    page.click("[data-testid=view-unrolled]")
    wait_idle(page)
    assert lens(page, "selected") == "linear_1_2:3"
    assert facts(page)["shape"] == "(2, 9, 8)"
    click_item(page, "linear_1_2:2")
    plotted(page, "(2, 5, 8) float32")
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    assert lens(page, "selected") == "linear_1_2"
    assert page.locator("[data-testid=pass-picker]").input_value() == "1"
    plotted(page, "(2, 5, 8) float32")
    assert facts(page)["module"] == "fc — pass 2 of 3"
    assert page.errors == []


def test_a_folded_blocks_second_pass_names_its_own_module_and_parameters(page) -> None:
    torch.manual_seed(0)
    w = LensWidget(*two_folding_blocks())
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    click_item(page, "linear_1_1")
    plotted(page, "(4, 6) float32")
    assert facts(page)["params"].split() == ["0.fc.weight", "(6,", "6)", "0.fc.bias", "(6)"]
    page.select_option("[data-testid=pass-picker]", "1")
    page.wait_for_function(
        "() => window.__fake.log.sent.some(m => m.params && m.params.id === 'linear_2_6')"
    )
    plotted(page, "(4, 6) float32")
    assert facts(page)["params"].split() == ["1.fc.weight", "(6,", "6)", "1.fc.bias", "(6)"]
    assert facts(page)["module"] == "1.fc — pass 2 of 2"
    assert page.errors == []
