"""A 600 px wide widget (plain page, real traced model behind the real request handler):
nothing overflows it, a long model name does not push the search box onto a second line,
long parameter and module names wrap inside the inspector, the search dropdown stays in,
the titles of a channel grid do not run into each other.
"""

from __future__ import annotations

import pytest
from lens_harness import open_widget, wait_idle, widget_kernel
from test_inspector_page import MAIN, ops_of, plot_data, select_by_search

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from lens_widget.widget import LensWidget  # noqa: E402

# ---- narrow widgets ---------------------------------------------------------------------


class AVeryLongModelClassNameThatWouldPushTheSearchBoxOntoASecondToolbarLine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        inner = nn.Module()
        inner.extraordinarily_long_projection_layer_name = nn.Linear(6, 6)
        outer = nn.Module()
        outer.a_deeply_nested_submodule_with_a_long_name = inner
        self.encoder_stack_with_a_descriptive_name = outer
        self.weight_with_an_exceptionally_long_parameter_name_for_layout = nn.Parameter(
            torch.ones(6)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = (
            self.encoder_stack_with_a_descriptive_name.a_deeply_nested_submodule_with_a_long_name
        )
        y = inner.extraordinarily_long_projection_layer_name(x)
        return y * self.weight_with_an_exceptionally_long_parameter_name_for_layout


OVERFLOW = """() => {
  const root = document.querySelector('[data-testid=lens-root]').getBoundingClientRect();
  const out = [];
  for (const el of document.querySelectorAll('[data-testid=lens-root] *')) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || el.closest('[hidden]')) continue;
    // the inspector scrolls vertically: only sideways overflow counts inside it
    const inInspector = !!el.closest('.lens-inspector');
    const sideways = r.left < root.left - 0.5 || r.right > root.right + 0.5;
    const down = !inInspector && (r.top < root.top - 0.5 || r.bottom > root.bottom + 0.5);
    if (sideways || down) out.push(`${el.tagName}.${el.className.baseVal ?? el.className}`);
  }
  const insp = document.querySelector('.lens-inspector');
  const wide = insp && !insp.hidden && insp.scrollWidth > insp.clientWidth + 1;
  if (wide) out.push('the inspector scrolls sideways');
  return out;
}"""


def long_named_widget() -> LensWidget:
    model = AVeryLongModelClassNameThatWouldPushTheSearchBoxOntoASecondToolbarLine().eval()
    return LensWidget(model, torch.randn(3, 6))


def test_a_long_model_name_does_not_push_the_search_box_down(page) -> None:
    open_widget(page, long_named_widget().graph, width=1240)
    title = page.locator("[data-testid=model-title]").bounding_box()
    search = page.locator("[data-testid=search]").bounding_box()
    assert abs(search["y"] - title["y"]) < title["height"]  # the same toolbar line
    assert "AVeryLongModelClassName" in page.get_attribute("[data-testid=model-title]", "title")
    assert page.errors == []


def test_nothing_overflows_a_600px_widget(page, artifacts) -> None:
    w = long_named_widget()
    open_widget(page, w.graph, python_kernel=widget_kernel(w), width=600)
    root = page.locator("[data-testid=lens-root]").bounding_box()
    assert 595 <= root["width"] <= 605
    assert page.evaluate(OVERFLOW) == []
    title = page.locator("[data-testid=model-title]").bounding_box()
    search = page.locator("[data-testid=search]").bounding_box()
    assert abs(search["y"] - title["y"]) < title["height"]  # one toolbar line, still
    assert page.inner_text("[data-testid=expand-all]") == "Expand"  # a shorter label
    # the search dropdown stays inside the widget
    page.fill("[data-testid=search]", "a_deeply_nested")
    page.locator("[data-testid=search-result]").first.wait_for()
    assert page.evaluate(OVERFLOW) == []
    page.keyboard.press("Escape")
    # an op with a long parameter name and a deep module, inspected
    page.check("[data-testid=toggle-params]")
    wait_idle(page)
    linear = ops_of(w, "linear")[0]
    select_by_search(page, linear)
    plot_data(page, MAIN)
    mul = ops_of(w, "mul")[0]
    select_by_search(page, mul)
    page.locator("[data-testid=inspector-id]", has_text=mul).wait_for()
    params = page.inner_text("[data-testid=inspector-params]")
    assert "weight_with_an_exceptionally_long_parameter_name_for_layout" in params
    plot_data(page, MAIN)
    page.screenshot(path=str(artifacts / "widget_600px.png"))
    assert page.evaluate(OVERFLOW) == []
    assert page.errors == []


def test_a_short_model_name_is_not_cut_where_it_fits(page) -> None:
    model = nn.Sequential(nn.Linear(4, 4)).eval()
    open_widget(page, LensWidget(model, torch.randn(2, 4)).graph, width=900)
    cut = page.evaluate(
        "() => { const t = document.querySelector('[data-testid=model-title]');"
        " return t.scrollWidth > t.clientWidth; }"
    )
    assert cut is False
    assert page.inner_text("[data-testid=model-title]").startswith("Sequential")
    assert page.errors == []


TITLE_BOXES = """(sel) => [...document.querySelectorAll(sel + ' .annotation-text')].map((a) => {
  const r = a.getBoundingClientRect();
  return { text: a.textContent, left: r.left, right: r.right, top: Math.round(r.top) };
})"""


def overlapping(boxes: list[dict]) -> list[tuple[str, str]]:
    """Pairs of titles on one row whose text runs into the next one's."""
    pairs = []
    for a in boxes:
        for b in boxes:
            if a is not b and a["top"] == b["top"] and a["left"] < b["left"] < a["right"] + 2:
                pairs.append((a["text"], b["text"]))
    return pairs


def test_channel_titles_do_not_run_into_each_other_in_a_600px_widget(page, artifacts) -> None:
    # 16 channels: four to a row in the narrow inspector, titled "channel 0" ... "channel 15"
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()).eval()
    w = LensWidget(model, torch.randn(1, 3, 8, 8))
    open_widget(page, w.graph, python_kernel=widget_kernel(w), width=600)
    select_by_search(page, ops_of(w, "conv2d")[0])
    plot_data(page, MAIN)
    page.wait_for_function(
        "(sel) => document.querySelectorAll(sel + ' .annotation-text').length >= 16", arg=MAIN
    )
    boxes = page.evaluate(TITLE_BOXES, MAIN)
    page.screenshot(path=str(artifacts / "widget_600px_channels.png"))
    assert overlapping(boxes) == []
    # still read as channels: the indices, under a caption naming them
    assert [b["text"] for b in boxes][:17] == [*(str(i) for i in range(16)), "channels 0–15"]

    # wide enough again (the notebook panel widened): whole titles come back
    page.evaluate("() => document.documentElement.style.setProperty('--lens-test-width', '1240px')")
    page.set_viewport_size({"width": 1300, "height": 900})
    page.wait_for_function(
        "(sel) => document.querySelector(sel + ' .annotation-text')?.parentElement"
        " && [...document.querySelectorAll(sel + ' .annotation-text')][1].textContent"
        " === 'channel 1'",
        arg=MAIN,
    )
    assert overlapping(page.evaluate(TITLE_BOXES, MAIN)) == []
    assert page.errors == []
