"""What a person sees for tensors that have nothing to plot or hold NaN/Inf, on a real traced
model behind the real request handler: an empty tensor says so (no fake stats, no blank
chart); NaN and ±Inf cells of a heatmap are grey, not the white of a missing cell that reads
as 0 on the diverging scale, in both themes; a line marks its non-finite points.
"""

from __future__ import annotations

import io

import pytest
import torch
from lens_harness import click_item, open_widget, widget_kernel
from PIL import Image  # the test extra's pillow: a missing one must fail, not skip
from torch import nn

from lens_widget.widget import LensWidget

MAIN = "[data-testid=plot-main]"
NOTE = "[data-testid=nonfinite-note]"


class EmptyAndNonFinite(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        none = x[:, :0] * 2  # (3, 0): no values at all
        logs = torch.log(x)  # NaN where x < 0, -inf where x == 0, exactly 0 where x == 1
        line = torch.log(x[0] - 1)  # [-inf, NaN, 0, NaN]
        grid = torch.log(x.reshape(1, 2, 2, 3))  # two 2x3 channels
        total = logs.nan_to_num().sum() + none.sum() + line.nan_to_num().sum()
        return total + grid.nan_to_num().sum()


X = torch.tensor([[1.0, -1.0, 2.0, 0.0], [3.0, -2.0, 1.0, 0.5], [-1.0, 1.0, 4.0, 2.0]])


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    return LensWidget(EmptyAndNonFinite(), (X,))


def op(widget: LensWidget, func: str, rank: int) -> str:
    """The one op of `func` whose output has `rank` dims."""
    (label,) = [
        n.label for n in widget.model_log.ops if n.func == func and n.activation.dim() == rank
    ]
    return label


def cell_colour(page, row: int, col: int) -> tuple[int, int, int]:
    """The colour on screen at the centre of cell (row, col) of the main plot's first heatmap."""
    x, y = page.evaluate(
        """([sel, r, c]) => {
          const d = document.querySelector(sel), fl = d._fullLayout, t = d.data[0];
          const box = d.getBoundingClientRect();
          return [box.left + fl.xaxis._offset + fl.xaxis.l2p(t.x ? t.x[c] : c),
                  box.top + fl.yaxis._offset + fl.yaxis.l2p(t.y ? t.y[r] : r)];
        }""",
        [MAIN, row, col],
    )
    png = page.screenshot(clip={"x": x - 1, "y": y - 1, "width": 3, "height": 3})
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel((1, 1))


def apart(a: tuple[int, int, int], b: tuple[int, int, int]) -> int:
    return max(abs(p - q) for p, q in zip(a, b, strict=True))


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_nan_cells_are_grey_and_an_empty_tensor_says_so(page, widget, artifacts, dark) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), dark=dark)
    page.mouse.move(0, 0)  # no hover label over the cells

    # log of negatives: 3 NaN cells and one -inf, next to cells that are exactly 0
    click_item(page, op(widget, "log", 2))
    page.locator(NOTE, has_text="3 NaN, 1 Inf cells shown grey").wait_for()
    page.locator(f"{MAIN} .hm image").first.wait_for()
    zero, nan, inf = cell_colour(page, 1, 2), cell_colour(page, 0, 1), cell_colour(page, 0, 3)
    assert zero == cell_colour(page, 2, 1)  # both exactly 0
    assert apart(nan, zero) >= 50, (nan, zero)
    assert apart(inf, zero) >= 50 and apart(nan, inf) <= 4  # one grey for every non-finite
    stats = page.inner_text("[data-testid=stats]")
    assert "NaN\n3" in stats and "Inf\n1" in stats
    page.screenshot(path=str(artifacts / f"nonfinite_heatmap_{'dark' if dark else 'light'}.png"))

    # an empty tensor: a plain sentence, no chart, no statistics of nothing
    click_item(page, op(widget, "mul", 2))
    empty = page.locator("[data-testid=activation-empty]")
    empty.wait_for()
    assert empty.inner_text() == "empty tensor: shape 3×0, no values"
    assert page.locator(f"{MAIN} .main-svg").count() == 0
    assert page.locator("[data-testid=stats]").count() == 0
    assert page.locator("[data-testid=plot-hist] .main-svg").count() == 0
    assert page.locator(NOTE).inner_text() == ""
    page.screenshot(path=str(artifacts / f"empty_tensor_{'dark' if dark else 'light'}.png"))

    # a line marks its non-finite points instead of leaving silent gaps
    click_item(page, op(widget, "log", 1))
    page.locator(NOTE, has_text="2 NaN, 1 Inf points marked").wait_for()
    assert empty.count() == 0
    marked = page.evaluate(
        "(sel) => document.querySelector(sel).data.filter(t => t.name === 'no value')"
        ".flatMap(t => t.x)",
        MAIN,
    )
    assert sorted(marked) == [0, 1, 3]
    page.screenshot(path=str(artifacts / f"nonfinite_line_{'dark' if dark else 'light'}.png"))
    assert page.errors == []


def test_an_image_grid_greys_its_nan_cells_channel_by_channel(page, widget) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    page.mouse.move(0, 0)
    click_item(page, op(widget, "log", 4))
    page.locator(NOTE, has_text="3 NaN, 1 Inf cells shown grey").wait_for()
    page.locator(f"{MAIN} .hm image").first.wait_for()
    traces = page.evaluate(
        "(sel) => document.querySelector(sel).data.map(t => [t.name ?? '', t.yaxis])", MAIN
    )
    # one channel per trace first (as without NaN), then a grey layer on each channel that has one
    assert traces == [["", "y"], ["", "y2"], ["no value", "y"], ["no value", "y2"]]
    zero, nan, inf = cell_colour(page, 0, 0), cell_colour(page, 0, 1), cell_colour(page, 1, 0)
    assert apart(nan, zero) >= 50 and apart(nan, inf) <= 4, (nan, zero, inf)
    assert page.errors == []
