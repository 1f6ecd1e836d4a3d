"""Real tier (#24 items 7, 9, 14, 15): in JupyterLab at 1400x1000, what a person sees of a
GPT-2 with an attention mask when they search `scaled_dot_product_attention` and press Enter
(every argument with its value, the whole source statement), click a module (its inspector),
and of a T5 (its masked log(0) marked quietly, and the legend saying why)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_server import Lab, lab_with_notebook, open_in_lab
from test_jupyterlab import (  # the same page hooks and CI rule on the bundle
    pytestmark,  # noqa: F401
    wait_for_kernel_idle,
    wait_for_widget,
)

NOTEBOOK = "inspect.ipynb"
GPT2 = """\
from lens_widget import LensWidget
from model_zoo import gpt2
case = gpt2()
w = LensWidget(case.model, case.args, case.kwargs)
w"""
T5 = """\
from model_zoo import t5
case5 = t5()
w5 = LensWidget(case5.model, case5.args, case5.kwargs)
w5"""
ROOTS = '[data-testid="lens-root"]'


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("lab_inspect")
    with lab_with_notebook(work, NOTEBOOK, [GPT2, T5]) as server:
        yield server


def run_all(page: object) -> None:
    page.evaluate(  # type: ignore[attr-defined]
        "() => window.jupyterapp.commands.execute('notebook:run-all-cells')"
    )


def test_the_call_the_module_and_the_quiet_mark_in_jupyterlab(lab: Lab, page, artifacts) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_in_lab(lab, page, NOTEBOOK)
    wait_for_kernel_idle(page)
    run_all(page)
    wait_for_widget(page)
    gpt = page.locator(ROOTS).nth(0)
    # search, Enter: the op's inspector, its arguments and its plot
    gpt.locator("[data-testid=search]").fill("scaled_dot_product")
    gpt.locator("[data-testid=search-result]").first.wait_for()
    gpt.locator("[data-testid=search]").press("Enter")
    call = gpt.locator("[data-testid=call][data-state=done]")
    call.wait_for(timeout=30_000)
    rows = dict(
        (r.get_attribute("data-name"), r.locator("td").inner_text().strip())
        for r in gpt.locator("[data-testid=call-args] [data-testid=call-arg]").all()
    )
    assert rows["is_causal"] == "False" and rows["dropout_p"] == "0.0"
    assert list(rows)[:4] == ["query", "key", "value", "attn_mask"]
    code = gpt.locator("[data-testid=source-code]").inner_text()
    assert "is_causal=is_causal," in code and code.rstrip().endswith(")")
    gpt.locator("[data-testid=plot-main].js-plotly-plot").wait_for(timeout=30_000)
    gpt.locator("[data-testid=inspector]").screenshot(path=str(artifacts / "lab_call.png"))
    # a module found by search: its inspector
    gpt.locator("[data-testid=search]").fill("ln_f")
    gpt.locator("[data-testid=search-result]").first.wait_for()
    gpt.locator("[data-testid=search]").press("Enter")
    gpt.locator("[data-testid=module-facts]").wait_for(timeout=30_000)
    assert gpt.locator("[data-testid=module-title]").inner_text() == "transformer.ln_f"
    assert gpt.locator("[data-testid=module-settings]").inner_text().startswith("(32,), eps=1e-05")

    # T5: its masked log(0) gets the quieter mark, and the legend says why
    t5 = page.locator(ROOTS).nth(1)
    t5.scroll_into_view_if_needed()
    legend = t5.locator("[data-testid=legend-nonfinite-masked]")
    legend.wait_for(timeout=60_000)
    assert legend.inner_text() == "NaN/Inf masked later (never reaches the output)"
    assert t5.locator("[data-testid=legend-nonfinite]").count() == 0
    t5.locator("[data-testid=search]").fill("log_1_")
    t5.locator("[data-testid=search-result]").first.wait_for()
    t5.locator("[data-testid=search]").press("Enter")
    note = t5.locator("[data-testid=nonfinite-reach]")
    note.wait_for(timeout=30_000)
    assert "masked away later" in note.inner_text()
    assert page.errors == []
