"""The built widget in a plain page with a fake kernel (fixtures/fake_kernel.js).

Covers: first render, expand/collapse, rolled/unrolled, click -> inspector + plot, search,
traits set from the kernel, busy kernel, re-run of unsaved activations, partial traces.
"""

from __future__ import annotations

import pytest
from lens_harness import click_item, kernel_log, lens, open_widget, wait_idle, widget_kernel

from model_zoo.synthetic_payload import make_payload


@pytest.fixture(scope="module")
def payload() -> dict:
    # 12 blocks: the default view opens the blocks but keeps attention/MLP collapsed
    return make_payload(n_layers=12, n_loop=3)


def node_ids(payload: dict, view: str, func: str) -> list[str]:
    return [n["id"] for n in payload[view]["nodes"] if n["func"] == func]


def sets_of(page, trait: str) -> list:
    return [v for k, v in kernel_log(page)["sets"] if k == trait]


def activation_requests(page) -> list[dict]:
    return [m for m in kernel_log(page)["sent"] if m.get("method") == "activation"]


def plot_traces(page) -> list[str]:
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    return page.evaluate(
        "() => document.querySelector('[data-testid=plot-main]').data.map(t => t.type)"
    )


def on_canvas(page, item_id: str) -> bool:
    pos = page.evaluate("(id) => window.__el.__lens.nodeScreenPos(id)", item_id)
    box = page.locator("[data-testid=graph-canvas]").bounding_box()
    return (
        pos is not None
        and box["x"] <= pos["x"] <= box["x"] + box["width"]
        and box["y"] <= pos["y"] <= box["y"] + box["height"]
    )


def test_renders_collapsed_to_a_readable_depth(page, payload, artifacts) -> None:
    open_widget(page, payload)
    assert page.locator("[data-testid=graph-canvas]").is_visible()
    count = lens(page, "visibleCount")
    assert 3 <= count <= 150
    assert count < payload["nOps"]
    assert lens(page, "drawnItems") > 0
    assert "blocks.0" in lens(page, "expanded")
    assert "blocks.0.attn" not in lens(page, "expanded")
    # the default expansion was pushed to the kernel
    assert sets_of(page, "expanded")[-1] == lens(page, "expanded")
    assert page.evaluate("() => performance.getEntriesByName('lens:first-paint').length") == 1
    # a graph too tall to fit opens readable (not shrunk to a thin column) on its inputs
    assert lens(page, "scale") >= 0.9
    inputs = [n["id"] for n in payload["unrolled"]["nodes"] if n["kind"] == "input"]
    assert inputs and all(on_canvas(page, i) for i in inputs)
    assert_legend_beside_canvas(page)
    page.screenshot(path=str(artifacts / "widget_default.png"))
    assert page.errors == []


def assert_legend_beside_canvas(page) -> None:
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    legend = page.locator("[data-testid=legend]").bounding_box()
    assert legend is not None and legend["height"] > 0
    assert legend["y"] >= canvas["y"] + canvas["height"]  # below the canvas, not over it


def test_small_graph_opens_whole_and_readable(page, artifacts) -> None:
    import torch
    from torch import nn

    import lens_widget as lw
    from lens_widget.widget.payload import build_payload

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    small = build_payload(lw.trace(model, torch.randn(3, 4)))
    open_widget(page, small)
    page.screenshot(path=str(artifacts / "widget_small.png"))
    assert lens(page, "scale") >= 0.9
    assert all(on_canvas(page, i) for i in lens(page, "visibleIds"))
    assert_legend_beside_canvas(page)
    # with the inspector open the canvas narrows; the legend still stays off it
    op = next(i for i in lens(page, "visibleIds") if not i.startswith("@"))
    click_item(page, op)
    wait_idle(page)
    assert lens(page, "selected") == op
    assert_legend_beside_canvas(page)
    assert page.errors == []


def test_expand_and_collapse_a_module(page, payload) -> None:
    open_widget(page, payload)
    before = lens(page, "visibleCount")
    click_item(page, "@blocks.0.attn:1")
    wait_idle(page)
    after = lens(page, "visibleCount")
    attn_ops = sum(
        1
        for n in payload["unrolled"]["nodes"]
        if n["module"] == "blocks.0.attn" and n["kind"] == "op"
    )
    assert after == before - 1 + attn_ops
    assert "blocks.0.attn" in sets_of(page, "expanded")[-1]
    assert any(i.startswith("softmax") for i in lens(page, "visibleIds"))
    # clicking the expanded box's header collapses it again
    pos = page.evaluate("() => window.__el.__lens.groupHeaderPos('blocks.0.attn:1')")
    page.mouse.click(pos["x"], pos["y"])
    wait_idle(page)
    assert lens(page, "visibleCount") == before
    assert "blocks.0.attn" not in sets_of(page, "expanded")[-1]
    assert page.errors == []


def test_expand_all_and_collapse_all(page, payload) -> None:
    open_widget(page, payload)
    page.click("[data-testid=expand-all]")
    wait_idle(page)
    shown = sum(
        1 for n in payload["unrolled"]["nodes"] if n["kind"] not in ("param", "buffer", "const")
    )
    assert lens(page, "visibleCount") == shown
    page.click("[data-testid=collapse-all]")
    wait_idle(page)
    assert lens(page, "expanded") == []
    assert lens(page, "visibleCount") < 40
    assert page.errors == []


def test_show_parameters_adds_their_nodes(page, payload) -> None:
    open_widget(page, payload)
    before = set(lens(page, "visibleIds"))
    page.check("[data-testid=toggle-params]")
    wait_idle(page)
    added = set(lens(page, "visibleIds")) - before
    assert "pos_embed.weight" in added
    page.check("[data-testid=toggle-shapes]")
    wait_idle(page)
    assert page.errors == []


def test_rolled_view_folds_repeated_passes(page, payload, artifacts) -> None:
    open_widget(page, payload)
    unrolled = lens(page, "visibleIds")
    # the loop cell ran three times: three tanh ops in the unrolled view
    assert len([i for i in unrolled if i.startswith("tanh")]) == 3
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    assert lens(page, "view") == "rolled"
    assert sets_of(page, "view")[-1] == "rolled"
    rolled = lens(page, "visibleIds")
    assert len(rolled) < len(unrolled)
    # one rolled tanh stands for the three passes of the loop
    tanh = [i for i in rolled if i.startswith("tanh")]
    assert len(tanh) == 1 and ":" not in tanh[0]
    page.screenshot(path=str(artifacts / "widget_rolled.png"))
    page.click("[data-testid=view-unrolled]")
    wait_idle(page)
    assert lens(page, "visibleIds") == unrolled
    assert page.errors == []


def test_toggling_the_view_with_a_selection_redraws_the_other_view(page, payload) -> None:
    open_widget(page, payload)
    unrolled = lens(page, "visibleIds")
    tanh = next(i for i in unrolled if i.startswith("tanh"))
    click_item(page, tanh)
    assert lens(page, "selected") == tanh
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    rolled = lens(page, "visibleIds")
    # the canvas shows the rolled graph, and the selection moved to the tanh layer
    assert len([i for i in rolled if i.startswith("tanh")]) == 1
    assert len(rolled) < len(unrolled)
    assert lens(page, "selected") == tanh.split(":")[0]
    assert page.errors == []


def test_click_op_opens_inspector_and_plots(page, payload, artifacts) -> None:
    open_widget(page, payload)
    op = node_ids(payload, "unrolled", "conv2d")[0]
    click_item(page, "@patch_embed.proj:1")
    wait_idle(page)
    click_item(page, op)
    assert lens(page, "selected") == op
    assert sets_of(page, "selected")[-1] == op
    panel = page.locator("[data-testid=inspector]")
    panel.wait_for(state="visible")
    assert op in panel.locator("[data-testid=inspector-id]").inner_text()
    # a conv output (N, C, H, W) is a grid of channel heatmaps
    traces = plot_traces(page)
    assert traces.count("heatmap") == 16
    assert activation_requests(page)[-1]["params"]["id"] == op
    assert page.locator("[data-testid=stats]").is_visible()
    assert page.locator("[data-testid=plot-hist].js-plotly-plot").count() == 1
    # the channel window re-requests the next channels
    page.click("[data-testid=channels-next]")
    page.wait_for_function(
        "() => window.__fake.log.sent.filter(m => m.method === 'activation').length >= 2"
    )
    assert activation_requests(page)[-1]["params"]["channelStart"] == 16
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid=plot-main] .annotation-text')]
            .some(a => a.textContent === 'channel 16')"""
    )
    assert page.locator("[data-testid=plot-main]").bounding_box()["height"] > 100
    page.screenshot(path=str(artifacts / "widget_inspector.png"))
    # everything came from the page itself: no CDN, no network
    assert all(u.startswith(("http://lens.test/", "blob:", "data:")) for u in page.request_urls)
    assert page.errors == []


def test_inspector_links_select_neighbours(page, payload) -> None:
    open_widget(page, payload)
    op = node_ids(payload, "unrolled", "flatten")[0]
    click_item(page, op)
    page.locator("[data-testid=inspector] .lens-link", has_text="transpose").first.click()
    wait_idle(page)
    assert lens(page, "selected").startswith("transpose")
    # a token sequence (B, T, F) is one heatmap
    assert plot_traces(page) == ["heatmap"]
    assert page.errors == []


def test_rolled_pass_picker_requests_that_pass(page, payload) -> None:
    open_widget(page, payload, traits={"view": "rolled"})
    tanh = node_ids(payload, "rolled", "tanh")[0]
    click_item(page, tanh)
    picker = page.locator("[data-testid=pass-picker]")
    picker.wait_for()
    assert activation_requests(page)[-1]["params"]["id"] == f"{tanh}:1"
    picker.select_option("2")
    page.wait_for_function(
        "(id) => window.__fake.log.sent.some(m => m.method === 'activation' && m.params.id === id)",
        arg=f"{tanh}:3",
    )
    plot_traces(page)
    assert page.errors == []


def test_search_jumps_to_and_selects_a_hidden_op(page, payload) -> None:
    open_widget(page, payload)
    assert "blocks.5.attn" not in lens(page, "expanded")
    page.fill("[data-testid=search]", "softmax")
    results = page.locator("[data-testid=search-result]")
    results.first.wait_for()
    assert results.count() >= 12
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    wait_idle(page)
    target = node_ids(payload, "unrolled", "softmax")[1]
    assert lens(page, "selected") == target
    assert "blocks.1.attn" in lens(page, "expanded")
    assert on_canvas(page, target)
    page.locator("[data-testid=inspector]").wait_for(state="visible")
    # a module hit expands its parents and centres the box
    page.fill("[data-testid=search]", "blocks.7.mlp")
    page.locator("[data-testid=search-result]").first.click()
    wait_idle(page)
    assert on_canvas(page, "@blocks.7.mlp:1")
    assert lens(page, "selected") == ""  # the softmax picked before is no longer shown
    # the module's own inspector in its place (#24: search that lands)
    assert page.inner_text("[data-testid=module-title]") == "blocks.7.mlp"
    assert page.locator("[data-testid=inspector-id]").count() == 0
    assert page.errors == []


def test_search_typed_right_after_escape_stays_open(page, payload) -> None:
    """Escape closes the results; typing again at once reopens them for good (a hide left
    from the blur used to close them again 150 ms later, and a quick user lost the list)."""
    open_widget(page, payload)
    page.fill("[data-testid=search]", "softmax")
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Escape")
    assert page.locator("[data-testid=search-results]").is_hidden()
    page.fill("[data-testid=search]", "gelu")
    page.wait_for_timeout(400)  # past the blur's hide delay
    results = page.locator("[data-testid=search-result]")
    assert results.first.is_visible()
    assert "gelu" in results.first.inner_text().lower()
    assert page.errors == []


def test_traits_set_by_the_kernel(page, payload) -> None:
    open_widget(page, payload)
    gelu = node_ids(payload, "unrolled", "gelu")[3]
    page.evaluate("(id) => window.__fake.kernelSet('selected', id)", gelu)
    wait_idle(page)
    assert lens(page, "selected") == gelu
    assert "blocks.3.mlp.act" in lens(page, "expanded")
    assert on_canvas(page, gelu)
    page.locator("[data-testid=inspector-id]", has_text=gelu).wait_for()
    page.evaluate("() => window.__fake.kernelSet('expanded', [])")
    wait_idle(page)
    assert lens(page, "expanded") == []
    page.evaluate("() => window.__fake.kernelSet('view', 'rolled')")
    wait_idle(page)
    assert lens(page, "view") == "rolled"
    # the selection follows to the rolled layer of that op
    assert gelu.startswith(lens(page, "selected")) and lens(page, "selected")
    page.evaluate("() => window.__fake.kernelSet('status', 're-running the model…')")
    assert "re-running" in page.locator("[data-testid=status]").inner_text()
    assert page.errors == []


def test_busy_kernel_is_reported(page, payload) -> None:
    open_widget(page, payload, kernel={"delayMs": 5})
    page.evaluate("() => { window.__fake.kernel.silent = true; }")
    click_item(page, node_ids(payload, "unrolled", "flatten")[0])
    status = page.locator("[data-testid=activation-status]")
    status.filter(has_text="waiting for kernel").wait_for(timeout=5000)
    assert page.errors == []


def test_unsaved_activation_offers_a_rerun(page) -> None:
    p = make_payload(n_layers=2, unsaved=("conv2d",))
    open_widget(page, p)
    op = node_ids(p, "unrolled", "conv2d")[0]
    click_item(page, op)
    page.locator("[data-testid=activation-status]", has_text="not saved").wait_for()
    assert activation_requests(page) == []
    page.click("[data-testid=rerun]")
    # the fake kernel answers, then pushes a graph where the op is saved
    plot_traces(page)
    reruns = [m for m in kernel_log(page)["sent"] if m.get("method") == "rerun"]
    assert reruns and reruns[0]["params"]["id"] == op
    assert activation_requests(page)[-1]["params"]["id"] == op
    assert page.errors == []


def test_an_unsaved_op_shows_no_statistics_of_the_op_before(page) -> None:
    p = make_payload(n_layers=2, unsaved=("conv2d",))
    open_widget(page, p)
    click_item(page, node_ids(p, "unrolled", "flatten")[0])
    plot_traces(page)
    assert page.locator(".lens-stats").inner_text()  # the saved op's statistics
    click_item(page, node_ids(p, "unrolled", "conv2d")[0])
    page.locator("[data-testid=activation-status]", has_text="not saved").wait_for()
    assert page.locator(".lens-stats").inner_text() == ""
    assert page.errors == []


def test_partial_trace_shows_the_error(page) -> None:
    p = make_payload(n_layers=2, error=True)
    open_widget(page, p)
    banner = page.locator("[data-testid=error-banner]")
    assert banner.is_visible()
    assert "RuntimeError" in banner.inner_text()
    banner.locator(".lens-link").click()
    wait_idle(page)
    assert lens(page, "selected") == p["failedOp"]
    assert on_canvas(page, p["failedOp"])
    assert page.errors == []


def _tiny_gpt2():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("lens_widget.widget")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, attn_implementation="eager"
    )
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(1))
    return model, ids


def test_real_model_through_the_python_kernel(page, artifacts) -> None:
    """A traced GPT-2 (random weights) and the real request handler behind the fake comm."""
    model, ids = _tiny_gpt2()
    from lens_widget.widget import LensWidget

    w = LensWidget(model, (ids,))
    open_widget(page, w.graph, python_kernel=widget_kernel(w))
    assert lens(page, "visibleCount") > 3
    page.fill("[data-testid=search]", "softmax")
    page.keyboard.press("Enter")
    wait_idle(page)
    target = lens(page, "selected")
    assert target.startswith("softmax")
    assert w.graph["unrolled"]["nodes"][0]["id"] != target  # a real id from the log
    traces = plot_traces(page)
    assert traces and set(traces) <= {"heatmap", "scatter"}
    # the stats table shows the real tensor's numbers
    stats = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-testid=stats] td')]
            .map(td => [td.children[0].textContent, td.children[1].textContent]))"""
    )
    act = w.model_log[target].activation.detach().float()
    assert float(stats["max"]) == pytest.approx(float(act.max()), rel=1e-4)
    assert float(stats["min"]) == pytest.approx(float(act.min()), rel=1e-4, abs=1e-7)
    assert int(stats["numel"].replace(",", "")) == act.numel()
    page.screenshot(path=str(artifacts / "widget_gpt2.png"))
    page.click("[data-testid=view-rolled]")
    wait_idle(page)
    layer = next(n["id"] for n in w.graph["rolled"]["nodes"] if target in n["passes"])
    assert lens(page, "selected") == layer
    assert page.errors == []
