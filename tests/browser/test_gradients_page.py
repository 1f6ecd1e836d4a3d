"""What a person sees of a traced backward in the built widget (plain page, real request
handler): the inspector's activation | gradient switch plotting the op's real gradient, the
gradient-norm overlay, the backward panel listing a cut-off parameter as "no gradient", and
the banner of a backward that raised.

Logs with gradients come from tests/python/gradient_fixture.py (`traced_with_grads`): the
model's forward and backward traced by `lw.trace(..., backward=...)`.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lens_harness import click_item, lens, open_widget, wait_idle, widget_kernel

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget
from model_zoo.language import bert, gpt2
from tests.python.gradient_fixture import CutOff, squared_mean, traced_with_grads

MAIN = "[data-testid=plot-main]"
ACT = "[data-testid=activation]"
STATUS = "[data-testid=activation-status]"


def cut_off_widget(**kwargs) -> LensWidget:
    torch.manual_seed(0)
    return LensWidget.from_log(traced_with_grads(CutOff(), torch.randn(5, 6), **kwargs))


def shown_heatmap(page) -> np.ndarray:
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    (trace,) = page.evaluate(f"document.querySelector('{MAIN}').data.map(t => ({{z: t.z}}))")
    return np.array(trace["z"], dtype=np.float64)


def colors(page, ids: list[str]) -> dict[str, str | None]:
    return {i: page.evaluate("(id) => window.__el.__lens.overlayColor(id)", i) for i in ids}


def test_the_gradient_switch_plots_the_ops_gradient(page, artifacts) -> None:
    w = cut_off_widget()
    log = w.model_log
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, "relu_1_2")
    page.wait_for_function(f"() => document.querySelector('{ACT}').dataset.state === 'done'")
    assert page.inner_text("[data-testid=activation-title]") == "ACTIVATION"
    activation = shown_heatmap(page)
    np.testing.assert_allclose(activation, log["relu_1_2"].activation.numpy(), rtol=1e-6)

    page.click("[data-testid=value-grad]")
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{ACT}');
            return a.dataset.value === 'grad' && a.dataset.state === 'done'; }}"""
    )
    assert page.inner_text("[data-testid=activation-title]") == "GRADIENT"
    note = page.inner_text("[data-testid=activation-note]")
    assert note.startswith("gradient of the loss w.r.t. this output"), note
    page.wait_for_function(
        "(a) => { const d = document.querySelector('[data-testid=plot-main]').data;"
        " return d && d[0].z.flat().some((v, i) => v !== a[i]); }",
        arg=activation.flatten().tolist(),
    )
    grad = log["relu_1_2"].grad.numpy()
    np.testing.assert_allclose(shown_heatmap(page), grad, rtol=1e-5, atol=1e-9)
    assert not np.allclose(grad, activation)
    stats = page.inner_text("[data-testid=stats]")
    assert f"{grad.size}" in stats  # numel of the gradient
    page.screenshot(path=str(artifacts / "gradient_switch.png"))

    # the switch stays on "gradient": an op no gradient reached says so
    click_item(page, "linear_2_3")
    page.locator(STATUS, has_text="no gradient reached this op").wait_for()
    assert page.locator(f"{MAIN} .main-svg").count() == 0 or not page.evaluate(
        f"document.querySelector('{MAIN}').data"
    )
    page.click("[data-testid=value-activation]")
    page.wait_for_function(f"() => document.querySelector('{ACT}').dataset.state === 'done'")
    assert page.inner_text("[data-testid=activation-title]") == "ACTIVATION"
    assert page.errors == []


def test_a_log_without_gradients_has_no_switch_and_no_gradient_metric(page) -> None:
    torch.manual_seed(0)
    w = LensWidget(CutOff(), (torch.randn(5, 6),))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, "relu_1_2")
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    assert page.locator("[data-testid=value-grad]").count() == 0
    options = page.eval_on_selector_all(
        "[data-testid=metric-picker] option", "els => els.map(e => e.value)"
    )
    assert "gradNorm" not in options and "flops" in options
    assert page.locator("[data-testid=toggle-backward]").is_hidden()
    assert page.errors == []


def test_gradient_norm_colors_the_graph_and_the_legend_says_so(page, artifacts) -> None:
    w = cut_off_widget()
    log = w.model_log
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    ops = ["linear_1_1", "relu_1_2", "linear_2_3", "add_1_5", "linear_3_6"]
    assert set(colors(page, ops).values()) == {None}
    page.select_option("[data-testid=metric-picker]", "gradNorm")
    page.locator("[data-testid=overlay-legend]").wait_for(state="visible")
    page.wait_for_function("() => window.__el.__lens.overlayColor('relu_1_2') !== null")
    # the scale spans every op the backward reached, the loss's own ops included
    norms = {
        op.label: float(torch.linalg.vector_norm(op.grad)) for op in log.ops if op.grad is not None
    }
    top = max(norms, key=norms.__getitem__)
    bottom = min(norms, key=norms.__getitem__)
    got = colors(page, [*ops, top, bottom])
    assert got[top] == "rgb(253,231,37)" and got[bottom] == "rgb(68,1,84)"
    assert got["linear_2_3"] == "#dee2e6"  # no gradient reached it: "no value"
    legend = page.inner_text("[data-testid=overlay-legend]")
    assert "gradient norm (max)" in legend
    assert "NaN/Inf gradient" in legend and "got no gradient" in legend
    page.screenshot(path=str(artifacts / "gradient_norm_overlay.png"))

    # a collapsed module shows the largest norm inside it; a log scale is offered
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    page.wait_for_function("() => window.__el.__lens.overlayColor('@fc:1') !== null")
    page.check("[data-testid=metric-log]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=overlay-range]').textContent.includes('log')"
    )
    # the op reading the cut-off parameters is outlined as "got no gradient"
    assert lens(page, "overlayStarved('@aux:1')") is True
    assert lens(page, "overlayStarved('@fc:1')") is False
    assert page.errors == []


def test_the_backward_panel_lists_the_cut_off_parameter_and_links_to_ops(page, artifacts) -> None:
    w = cut_off_widget()
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    button = page.locator("[data-testid=toggle-backward]")
    assert "2 without gradient" in button.inner_text()
    button.click()
    panel = page.locator("[data-testid=gradient-panel]")
    panel.wait_for(state="visible")
    rows = panel.locator("[data-testid=leaf-row]")
    names = rows.evaluate_all("els => els.map(e => e.dataset.name)")
    assert names[:2] == ["aux.weight", "aux.bias"] and len(names) == 6
    statuses = rows.locator("[data-testid=leaf-status]").all_inner_texts()
    assert statuses[:2] == ["no gradient", "no gradient"]
    assert all(s.startswith("gradient") for s in statuses[2:])
    assert "2 got no gradient" in panel.locator("[data-testid=leaves]").inner_text().lower()
    page.screenshot(path=str(artifacts / "backward_panel.png"))

    # clicking the cut-off parameter selects its node, showing parameters, outlined
    rows.first.locator("button").click()
    page.wait_for_function("() => window.__el.__lens.selected === 'aux.weight'")
    wait_idle(page)
    assert page.is_checked("[data-testid=toggle-params]")
    assert "aux.weight" in lens(page, "visibleIds")
    assert lens(page, "overlayStarved('aux.weight')") is True
    assert lens(page, "overlayStarved('fc.weight')") is False

    # the autograd nodes, in order, link to the forward ops: a click plots that op's gradient
    nodes = panel.locator("[data-testid=backward-node]")
    first = nodes.first.inner_text()
    assert first.startswith("MeanBackward0") or first.startswith("PowBackward0"), first
    addmm = nodes.filter(has_text="AddmmBackward0").filter(has_text="linear_3_6")
    addmm.locator("button").click()
    page.wait_for_function("() => window.__el.__lens.selected === 'linear_3_6'")
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{ACT}');
            return a.dataset.value === 'grad' && a.dataset.state === 'done'; }}"""
    )
    # the inspector names the op's own node and those of its internals (the weight's t)
    assert "AddmmBackward0, TBackward0" in page.inner_text("[data-testid=inspector]")
    np.testing.assert_allclose(
        shown_heatmap(page), w.model_log["linear_3_6"].grad.numpy(), rtol=1e-5, atol=1e-9
    )
    # a node of an op's internals says which op it is in, and links there too
    inside = nodes.filter(has_text="TBackward0").filter(has_text="in linear_1_1")
    assert inside.count() == 1
    inside.locator("button").click()
    page.wait_for_function("() => window.__el.__lens.selected === 'linear_1_1'")
    page.locator("[data-testid=inspector-id]", has_text="linear_1_1").wait_for()
    assert page.errors == []


def test_two_backward_passes_can_be_picked(page) -> None:
    w = cut_off_widget(losses=(squared_mean, torch.sum))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    click_item(page, "add_1_5")
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    picker = page.locator("[data-testid=backward-pass-picker]")
    assert picker.is_hidden()  # only with the gradient shown
    page.click("[data-testid=value-grad]")
    picker.wait_for(state="visible")
    first, second = w.model_log["add_1_5"].grads
    for value, expected, caption in [
        ("", first + second, "summed over 2 backward passes"),
        ("2", second, "backward pass 2"),
        ("1", first, "backward pass 1"),
    ]:
        picker.select_option(value)
        page.locator("[data-testid=activation-note]", has_text=caption).wait_for()
        page.wait_for_function(f"() => document.querySelector('{ACT}').dataset.state === 'done'")
        np.testing.assert_allclose(shown_heatmap(page), expected.numpy(), rtol=1e-5, atol=1e-7)
    assert page.errors == []


def test_a_backward_that_raised_shows_a_banner_naming_the_op(page) -> None:
    w = cut_off_widget(second_backward_error=True)
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    banner = page.locator("[data-testid=backward-banner]")
    banner.wait_for(state="visible")
    text = banner.inner_text()
    assert (
        "Backward pass 2 raised: RuntimeError: Trying to backward through the graph a second"
        in text
    )
    assert "freed by backward pass 1" in text
    involved = w.model_log.backward_passes[1].error_op
    assert involved is not None and involved.startswith("pow_")  # the loss's pow saved its input
    page.click("[data-testid=backward-error-op]")
    page.wait_for_function(f"() => window.__el.__lens.selected === {involved!r}")
    assert page.locator("[data-testid=inspector]").is_visible()
    assert page.errors == []


@pytest.fixture(scope="module")
def gpt2_widget() -> LensWidget:
    case = gpt2()
    case.model.eval()
    return LensWidget.from_log(traced_with_grads(case.model, case.args, case.kwargs))


def test_gpt2_gradient_of_a_layer_norm(page, gpt2_widget) -> None:
    log = gpt2_widget.model_log
    op = next(o.label for o in log.ops if o.module.endswith("h.1.ln_2") and o.func == "layer_norm")
    open_widget(page, gpt2_widget.graph, python_kernel=widget_kernel(gpt2_widget))
    page.fill("[data-testid=search]", op)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)
    page.locator(f"{MAIN}.js-plotly-plot").wait_for()
    page.click("[data-testid=value-grad]")
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{ACT}');
            return a.dataset.value === 'grad' && a.dataset.state === 'done'; }}"""
    )
    grad = log[op].grad  # (batch, token, feature): the plot shows batch item 0
    np.testing.assert_allclose(shown_heatmap(page), grad[0].numpy(), rtol=1e-4, atol=1e-9)
    assert page.inner_text("[data-testid=activation-dims]") == "(batch, token, feature)"
    assert page.errors == []


def test_a_saved_training_step_opens_with_its_backward(page, tmp_path) -> None:
    """Saved to disk, loaded without the model and opened: the backward panel names the
    cut-off parameters, and the gradient switch plots the gradient read from the file."""
    torch.manual_seed(0)
    traced_with_grads(CutOff(), torch.randn(5, 6)).save(tmp_path / "step")
    loaded = lw.load(tmp_path / "step")
    w = LensWidget.from_log(loaded)
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    button = page.locator("[data-testid=toggle-backward]")
    assert "2 without gradient" in button.inner_text()
    button.click()
    rows = page.locator("[data-testid=gradient-panel] [data-testid=leaf-row]")
    rows.first.wait_for()
    assert rows.evaluate_all("els => els.map(e => e.dataset.name)")[:2] == [
        "aux.weight",
        "aux.bias",
    ]
    click_item(page, "relu_1_2")
    page.wait_for_function(f"() => document.querySelector('{ACT}').dataset.state === 'done'")
    page.click("[data-testid=value-grad]")
    page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{ACT}');
            return a.dataset.value === 'grad' && a.dataset.state === 'done'; }}"""
    )
    assert page.inner_text("[data-testid=activation-title]") == "GRADIENT"
    grad = loaded["relu_1_2"].grad.numpy()
    page.wait_for_function(  # the plot shows the gradient (not the activation shown before)
        """(g) => { const d = document.querySelector('[data-testid=plot-main]').data;
            return d && d[0].z.flat().every((v, i) => Math.abs(v - g[i]) < 1e-6); }""",
        arg=grad.flatten().tolist(),
    )
    np.testing.assert_allclose(shown_heatmap(page), grad, rtol=1e-5, atol=1e-9)
    assert page.errors == []


def test_the_backward_panel_shows_long_leaf_names_whole(page) -> None:
    """BERT's query, key and value weights differ only at the end of their names: a name cut
    to fit the panel read alike for all of them; they wrap at dots instead."""
    case = bert()
    w = LensWidget.from_log(traced_with_grads(case.model, case.args, case.kwargs))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    page.click("[data-testid=toggle-backward]")
    names = page.locator("[data-testid=gradient-panel] [data-testid=leaf-row] button")
    names.first.wait_for()
    shown = names.evaluate_all(
        "els => els.map(e => ({text: e.innerText, cut: e.scrollWidth > e.clientWidth + 1,"
        " inside: e.getBoundingClientRect().right <= e.closest('aside').getBoundingClientRect()"
        ".right}))"
    )
    query = "bert.encoder.layer.0.attention.self.query.weight"
    assert query in w.model_log.leaves
    assert query in [s["text"].replace("\n", "") for s in shown]
    assert [s for s in shown if s["cut"] or not s["inside"]] == []
    assert page.errors == []
