"""What the inspector says of a call and of a module (#24 items 9, 14, 15), on a real traced
GPT-2 (SDPA, attention mask) behind the real request handler (plain page harness): every
argument by its role with its value, tensors as links to their producers, the whole source
statement, a module inspector after a click on a module or a search, and Enter landing on an
op's inspector and plot."""

from __future__ import annotations

import pytest
from lens_harness import lens, on_canvas, open_widget, scroll_into_view, wait_idle, widget_kernel

pytest.importorskip("transformers")

import lens_widget as lw  # noqa: E402
from lens_widget.widget import LensWidget  # noqa: E402
from model_zoo import gpt2  # noqa: E402

CALL = "[data-testid=call][data-state=done]"


@pytest.fixture(scope="module")
def widget() -> LensWidget:
    case = gpt2()
    return LensWidget(case.model, case.args, case.kwargs)


def _first_of(log: lw.ModelLog, func: str) -> str:
    return next(op.label for op in log.ops if op.func == func)


def _first(widget: LensWidget, func: str) -> str:
    return _first_of(widget.model_log, func)


def _search_enter(page, query: str) -> None:
    page.fill("[data-testid=search]", query)
    page.locator("[data-testid=search-result]").first.wait_for()
    page.keyboard.press("Enter")
    wait_idle(page)


def _arguments(page) -> dict[str, str]:
    page.locator(CALL).wait_for()
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll(
             '[data-testid=call-args] [data-testid=call-arg]')]
             .map(r => [r.dataset.name, r.querySelector('td').innerText.trim()]))"""
    )


def test_sdpa_call_lists_every_argument_and_its_whole_statement(page, widget, artifacts) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    label = _first(widget, "scaled_dot_product_attention")
    _search_enter(page, label)
    assert lens(page, "selected") == label
    args = _arguments(page)
    assert list(args)[:4] == ["query", "key", "value", "attn_mask"]
    assert args["is_causal"] == "False"
    assert args["dropout_p"] == "0.0"
    assert args["scale"] == "0.25"
    assert args["query"].startswith("transpose") and "2x2x12x16" in args["query"]
    fn = page.inner_text("[data-testid=call-function]")
    assert fn.strip() == "torch.nn.functional.scaled_dot_product_attention"
    assert "FLOPs" in page.inner_text("[data-testid=call-numbers]")
    # the statement is whole, not cut at "scaled_dot_product_attention("
    code = page.inner_text("[data-testid=source-code]")
    assert code.startswith("attn_output = torch.nn.functional.scaled_dot_product_attention(")
    assert "is_causal=is_causal," in code and code.rstrip().endswith(")")
    box = page.locator("[data-testid=source-code]").bounding_box()
    inspector = page.locator("[data-testid=inspector]").bounding_box()
    assert box and inspector and box["x"] + box["width"] <= inspector["x"] + inspector["width"] + 1
    page.locator("[data-testid=inspector]").screenshot(path=str(artifacts / "inspect_call.png"))
    # a tensor argument is a link: clicking it selects the node that produced it
    query = widget.model_log[label].parent_args[0].parent
    page.click(f"[data-testid=call-args] tr[data-name=query] button[data-id='{query}']")
    wait_idle(page)
    assert lens(page, "selected") == query
    page.locator(CALL).wait_for()
    assert _arguments(page)["dim0"] == "1"  # transpose(1, 2)
    assert page.errors == []


def test_search_enter_on_a_function_lands_on_its_op_with_a_plot(page, widget) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    _search_enter(page, "linear")
    assert lens(page, "selected") == _first(widget, "linear")
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    assert _arguments(page)["weight"].startswith("transformer.wte.weight")
    # a parameter's link shows it, parameters hidden or not
    page.click("[data-testid=call-args] tr[data-name=weight] button")
    wait_idle(page)
    assert lens(page, "selected") == "transformer.wte.weight"
    # "attn" finds the ops inside the attention modules too, not only the modules
    page.fill("[data-testid=search]", "attn")
    page.locator("[data-testid=search-result]").first.wait_for()
    rows = page.locator("[data-testid=search-result]").all_inner_texts()
    assert any(not r.startswith("▣") for r in rows) and any(r.startswith("▣") for r in rows)
    assert page.errors == []


def _module_facts(page) -> dict[str, str]:
    page.locator("[data-testid=module-facts]").wait_for()
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll(
             '[data-testid=module-facts] tr')]
             .map(r => [r.dataset.key, r.querySelector('td').innerText]))"""
    )


def test_a_module_found_by_search_gets_a_module_inspector(page, widget, artifacts) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    _search_enter(page, "ln_f")
    assert page.inner_text("[data-testid=module-title]") == "transformer.ln_f"
    # highlighted on the graph as a selected node is
    assert lens(page, "markedItem") == "@transformer.ln_f:1"
    facts = _module_facts(page)
    assert facts["class"] == "LayerNorm"
    assert facts["settings"] == widget._model.transformer.ln_f.extra_repr()  # noqa: SLF001
    assert facts["settings"].startswith("(32,), eps=1e-05")
    assert facts["params"] == "64"
    params = page.inner_text("[data-testid=module-params]")
    assert "weight" in params and "(32)" in params
    # its output is plotted
    page.locator("[data-testid=plot-main].js-plotly-plot").wait_for()
    page.locator("[data-testid=inspector]").screenshot(path=str(artifacts / "inspect_module.png"))
    assert page.errors == []


def test_clicking_a_module_on_the_graph_opens_it_and_its_inspector(page, widget) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    # a click on a closed module opens it and selects it: its inspector opens, the graph it
    # narrows keeps the clicked box where it was, and the open box is drawn marked
    stack = next(i for i in lens(page, "visibleIds") if "×" in i)
    key = stack[1:]
    pos = scroll_into_view(page, stack)
    page.mouse.click(pos["x"], pos["y"])
    wait_idle(page)
    assert page.locator("[data-testid=inspector]").is_visible()
    assert page.inner_text("[data-testid=module-title]") == "transformer.h.0"
    assert _module_facts(page)["class"] == "GPT2Block"
    assert lens(page, "markedBox") == key
    header = page.evaluate("(k) => window.__el.__lens.groupHeaderPos(k)", key)
    canvas = page.locator("[data-testid=graph-canvas]").bounding_box()
    assert header is not None and canvas is not None
    assert canvas["x"] <= header["x"] <= canvas["x"] + canvas["width"]
    assert canvas["y"] <= header["y"] <= canvas["y"] + canvas["height"]
    assert abs(header["y"] - pos["y"]) < 60  # its title about where the click was
    # its title: a click closes it and keeps it selected, its box on screen
    page.mouse.click(header["x"], header["y"])
    wait_idle(page)
    assert key.rsplit(":", 1)[0] not in lens(page, "expanded")
    assert page.inner_text("[data-testid=module-title]") == "transformer.h.0"
    assert lens(page, "markedItem") == stack and on_canvas(page, stack)
    # clicks on other modules follow
    collapsed = [i for i in lens(page, "visibleIds") if i.startswith("@")]
    assert collapsed, "the first view shows some module collapsed"
    key = collapsed[0][1:]
    pos = scroll_into_view(page, collapsed[0])
    page.mouse.click(pos["x"], pos["y"])
    wait_idle(page)
    address = key.rsplit(":", 1)[0]
    assert address in lens(page, "expanded")
    assert page.inner_text("[data-testid=module-title]") == address
    facts = _module_facts(page)
    module = widget._model.get_submodule(address)  # noqa: SLF001
    assert facts["class"] == type(module).__name__
    assert int(facts["params"].split()[0].replace(",", "")) == sum(
        p.numel() for p in module.parameters()
    )
    # the title of the open module: a click closes it and keeps its inspector
    header = page.evaluate("(k) => window.__el.__lens.groupHeaderPos(k)", key)
    page.mouse.click(header["x"], header["y"])
    wait_idle(page)
    assert address not in lens(page, "expanded")
    assert page.inner_text("[data-testid=module-title]") == address
    assert page.errors == []


def test_a_stack_of_blocks_shows_its_first_block(page, widget) -> None:
    open_widget(page, widget.graph, python_kernel=widget_kernel(widget))
    stacks = [i for i in lens(page, "visibleIds") if i.startswith("@") and "×" in i]
    assert stacks == ["@transformer.h.0×2"], lens(page, "visibleIds")
    _search_enter(page, "GPT2Block")  # the stack ranks first: its class is the query
    assert page.inner_text("[data-testid=module-title]") == "transformer.h.0"
    assert page.inner_text("[data-testid=module-id]") == (
        "GPT2Block · the first of 2 blocks folded here"
    )
    assert _module_facts(page)["class"] == "GPT2Block"
    assert page.errors == []


def test_a_saved_page_shows_the_whole_call_without_a_kernel(page, tmp_path) -> None:
    from test_standalone_html import open_from_disk

    case = gpt2()
    log = lw.trace(case.model, case.args, case.kwargs)
    path = log.to_html(tmp_path / "gpt2.html")
    assert open_from_disk(page, path) == []
    label = _first_of(log, "scaled_dot_product_attention")
    _search_enter(page, label)
    args = _arguments(page)
    assert args["is_causal"] == "False" and args["dropout_p"] == "0.0"
    assert "is_causal=is_causal," in page.inner_text("[data-testid=source-code]")
    _search_enter(page, "ln_f")
    assert _module_facts(page)["class"] == "LayerNorm"
    assert page.errors == []
