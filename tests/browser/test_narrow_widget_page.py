"""A 600 px wide widget (plain page, real traced model behind the real request handler):
nothing overflows it, a long model name does not push the search box onto a second line,
long parameter and module names wrap inside the inspector, the search dropdown stays in.
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
