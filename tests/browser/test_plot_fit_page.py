"""Plots fit the tensor (#36 item 3): every plot kind, for shapes from 1 to 10,000 along each
axis, has index axes that span exactly the data's cells, ticks inside them, no two tick labels
overlapping, and image tiles that are not thin strips (a (1, 8, 256, 4) attention output drew
each head's tile with an x-axis from −15 to 18, labels smeared, the data in a sliver)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from lens_harness import lens, open_widget, wait_idle, widget_kernel
from torch import nn

from lens_widget.widget import LensWidget

SHAPES: list[tuple[int, ...]] = [
    (1,),
    (2,),
    (10,),
    (10000,),  # line
    (2, 2),
    (10000, 2),
    (2, 10000),
    (300, 500),
    (1000, 1000),  # heatmap
    (1, 8, 256, 4),
    (1, 1, 10000, 2),
    (1, 2, 2, 10000),
    (1, 64, 7, 7),
    (1, 1, 2, 2),
    (1, 3, 999, 1000),  # images
    (2, 10000, 3),
    (1, 3, 10000),
    (3, 7, 5, 2, 2),  # sequence
]
ATTENTION = [1, 7, 300]


class Shapes(nn.Module):
    """One `sin` per shape, then one SDPA per attention length."""

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = [(x.expand(s) * torch.linspace(0, 3, s[-1])).sin() for s in SHAPES]
        for n in ATTENTION:
            q = (x.expand(1, 2, n, 4) * torch.linspace(0, 3, 4)).cos()
            outs.append(F.scaled_dot_product_attention(q, q.flip(2), q))
        return outs


FIGURE = """([sel, id]) => { const d = document.querySelector(sel);
  return !!d && window.__el.__lens.selected === id && d.dataset.ticks === 'fitted'; }"""

CHECK = (Path(__file__).parent / "fixtures" / "plot_fit_check.js").read_text()


def _select(page, label: str) -> None:
    page.fill("[data-testid=search]", label)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    assert lens(page, "selected") == label


def _check(page, sel: str, label: str, what: str) -> dict:
    page.wait_for_function(FIGURE, arg=[sel, label])
    got = page.evaluate(CHECK, sel)
    assert got["overlaps"] == [], f"{what}: tick labels overlap {got['overlaps'][:5]}"
    assert got["outside"] == [], f"{what}: ticks outside the data {got['outside'][:5]}"
    assert got["labels"] > 0, what
    for key, ax in got["axes"].items():
        assert ax["range"] == [-0.5, ax["n"] - 0.5], (
            f"{what} {key}: range {ax['range']} for {ax['n']} cells"
        )
        assert ax["vals"], f"{what} {key}: no ticks"
    return got


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    return LensWidget(Shapes(), (torch.tensor(0.5),))


def test_every_plot_kind_fits_its_data_from_1_to_10000_cells(page, widget, artifacts) -> None:
    log = widget.model_log
    sins = [op for op in log.ops if op.func == "sin"]
    sdpas = [op for op in log.ops if op.func == "scaled_dot_product_attention"]
    assert [tuple(op.shape) for op in sins] == SHAPES and len(sdpas) == len(ATTENTION)
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget), width=1340)
    for op, shape in zip(sins, SHAPES, strict=True):
        _select(page, op.label)
        if shape == (1,):  # one value: read out, not plotted
            page.locator("[data-testid=plot-main] .lens-scalar").wait_for()
            continue
        got = _check(page, "[data-testid=plot-main]", op.label, f"{shape}")
        page.wait_for_function(FIGURE, arg=["[data-testid=plot-hist]", op.label])
        hist = page.evaluate(CHECK, "[data-testid=plot-hist]")
        assert hist["overlaps"] == [], f"{shape} histogram: {hist['overlaps'][:5]}"
        if len(shape) == 4 and shape[2] > 1 and shape[3] > 1:  # an image grid: no tile a sliver
            axes = got["axes"]
            tiles = [(axes[k]["len"], axes["y" + k[1:]]["len"]) for k in axes if k[0] == "x"]
            assert len(tiles) == min(shape[1], 16), shape
            for w, h in tiles:
                assert min(w, h) / max(w, h) >= 0.2, f"{shape}: a {w:.0f}×{h:.0f} px tile"
        if shape == (1, 8, 256, 4):
            page.locator("[data-testid=plot-main]").screenshot(
                path=str(artifacts / "plot_head_tiles_256x4.png")
            )
    for op, n in zip(sdpas, ATTENTION, strict=True):
        _select(page, op.label)
        _check(page, "[data-testid=attention-plot]", op.label, f"attention {n}")
    assert page.errors == []
