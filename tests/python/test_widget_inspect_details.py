"""The inspector's "opDetails" and "moduleDetails" answers: every argument of a call by its
role (values printed, tensors named by their producers), the whole source statement, and a
module's class, settings, parameters and totals."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.widget import LensWidget
from lens_widget.widget.call_view import value_text
from lens_widget.widget.page_answers import page_answers
from lens_widget.widget.source_statement import statement_at
from model_zoo import gpt2, small_cnn
from tests.python.function_module import FunctionModule
from tests.python.widget_replies import ask


@pytest.fixture(scope="module")
def gpt2_widget() -> LensWidget:
    case = gpt2()
    return LensWidget(case.model, case.args, case.kwargs)


def _details(widget: LensWidget, op_id: str) -> dict:
    reply, buffers = ask(widget, "opDetails", {"id": op_id})
    assert reply["ok"], reply
    assert buffers == []
    return reply["result"]


def _first(widget: LensWidget, func: str) -> str:
    return next(op.label for op in widget.model_log.ops if op.func == func)


def test_sdpa_arguments_by_role_with_values(gpt2_widget: LensWidget) -> None:
    op = gpt2_widget.model_log[_first(gpt2_widget, "scaled_dot_product_attention")]
    result = _details(gpt2_widget, op.label)
    assert result["function"] == "torch.nn.functional.scaled_dot_product_attention"
    by_name = {a["name"]: a for a in result["arguments"]}
    assert list(by_name)[:4] == ["query", "key", "value", "attn_mask"]
    # tensors name the node that produced them, as the op's parents do
    assert [by_name[n]["producer"] for n in ("query", "key", "value", "attn_mask")] == [
        a.parent for a in op.parent_args
    ]
    assert by_name["query"]["value"] is None and by_name["query"]["shape"] == "2x2x12x16"
    # the non-tensor arguments, printed
    assert by_name["is_causal"]["value"] == "False"
    assert by_name["dropout_p"]["value"] == "0.0"
    # transformers 5 passes the scale; 4.57 passes None, 4.45 leaves torch's default
    scale = by_name["scale"]
    assert scale["value"] in ("0.25", "None")
    assert scale["value"] == "None" or not scale["default"]
    assert by_name["enable_gqa"] == {**by_name["enable_gqa"], "value": "False", "default": True}
    assert result["flops"] == op.flops and result["flops"] > 0


def test_whole_statement_not_cut(gpt2_widget: LensWidget) -> None:
    op = gpt2_widget.model_log[_first(gpt2_widget, "scaled_dot_product_attention")]
    assert op.source_code.endswith("scaled_dot_product_attention(")  # what the trace keeps
    statement = _details(gpt2_widget, op.label)["statement"]
    assert statement.startswith("attn_output = torch.nn.functional.scaled_dot_product_attention(")
    assert "is_causal=is_causal," in statement and statement.endswith(")")


def test_method_calls_name_dims_and_sizes(gpt2_widget: LensWidget) -> None:
    transpose = _details(gpt2_widget, _first(gpt2_widget, "transpose"))
    assert [(a["name"], a["value"]) for a in transpose["arguments"][1:]] == [
        ("dim0", "1"),
        ("dim1", "2"),
    ]
    assert transpose["arguments"][0]["name"] == "input"
    view = _details(gpt2_widget, _first(gpt2_widget, "view"))
    assert [a["name"] for a in view["arguments"]] == ["input", "size"]
    assert view["arguments"][1]["value"] == "(-1, 12)"
    # a list argument (GPT-2 of transformers 4 has no cat): its items by index
    joined = LensWidget(FunctionModule(lambda a: torch.cat([a, a * 2])), torch.ones(2))
    cat = _details(joined, _first(joined, "cat"))
    assert [a["name"] for a in cat["arguments"]][:2] == ["tensors[0]", "tensors[1]"]
    assert [a["producer"] for a in cat["arguments"]][:2] == ["input.0", _first(joined, "mul")]
    linear = _details(gpt2_widget, _first(gpt2_widget, "linear"))
    assert [a["name"] for a in linear["arguments"]] == ["input", "weight", "bias"]
    assert linear["arguments"][1]["producer"] == "transformer.wte.weight"
    assert linear["arguments"][2]["value"] == "None"


def test_unknown_op_is_refused(gpt2_widget: LensWidget) -> None:
    reply, _ = ask(gpt2_widget, "opDetails", {"id": "nope_1_1"})
    assert not reply["ok"] and "unknown node id" in reply["error"]
    reply, _ = ask(gpt2_widget, "opDetails", {"id": "x", "extra": 1})
    assert not reply["ok"] and "unknown params" in reply["error"]


def test_value_text() -> None:
    assert value_text((slice(None), slice(None, 12))) == "(:, :12)"
    assert value_text((Ellipsis, 1)) == "(..., 1)"
    assert value_text(torch.float32) == "torch.float32"
    assert value_text(torch.Size([2, 3])) == "(2, 3)"
    assert value_text((4,)) == "(4,)"
    assert value_text(float("-inf")) == "float('-inf')"
    assert value_text(object()) == "<object>"


def test_module_details_of_a_conv() -> None:
    case = small_cnn()
    widget = LensWidget(case.model, case.args, case.kwargs, timing=True)
    conv = next(a for a, m in case.model.named_modules() if isinstance(m, nn.Conv2d))
    reply, _ = ask(widget, "moduleDetails", {"address": conv})
    assert reply["ok"], reply
    r = reply["result"]
    module = case.model.get_submodule(conv)
    assert r["className"] == "Conv2d"
    assert r["extraRepr"] == module.extra_repr() and "stride=" in r["extraRepr"]
    assert [(p["name"], p["shape"]) for p in r["parameters"]] == [
        (f"{conv}.{n}", list(p.shape)) for n, p in module.named_parameters()
    ]
    assert r["nParams"] == sum(p.numel() for p in module.parameters())
    totals = widget.model_log.module_totals[conv]
    assert (r["nOps"], r["flops"], r["bytes"]) == (totals.n_ops, totals.flops, totals.bytes)
    assert r["flops"] and r["timeMs"] is not None and r["nPasses"] == 1
    assert r["outputs"] == [widget.model_log[conv].label]


def test_module_details_from_a_log_and_of_the_root() -> None:
    case = small_cnn()
    log = lw.trace(case.model, case.args)
    widget = LensWidget.from_log(log)
    reply, _ = ask(widget, "moduleDetails", {"address": ""})
    r = reply["result"]
    assert r["className"] == type(case.model).__name__ and r["extraRepr"] is None
    # without the model: the parameters the ops read
    assert r["nParams"] == sum(p.numel() for p in case.model.parameters())
    reply, _ = ask(widget, "moduleDetails", {"address": "no.such"})
    assert not reply["ok"] and "no module 'no.such'" in reply["error"]


def test_a_saved_page_answers_the_call_and_the_modules() -> None:
    """The standalone page embeds what the kernel would answer (page_answers.py), so a
    reopened notebook's page shows the whole call too."""
    case = gpt2()
    log = lw.trace(case.model, case.args, case.kwargs)
    meta = page_answers(log).meta
    sdpa = next(op.label for op in log.ops if op.func == "scaled_dot_product_attention")
    assert (
        meta["opDetails"][sdpa]
        == ask(LensWidget.from_log(log), "opDetails", {"id": sdpa})[0]["result"]
    )
    assert set(meta["moduleDetails"]) == set(log.modules)
    assert meta["moduleDetails"]["transformer.ln_f"]["className"] == "LayerNorm"
    assert meta["moduleDetails"]["transformer.ln_f"]["extraRepr"] is None  # no model in a page


def _sample() -> int:
    total = sum(
        [1, 2],
    )
    if total > 2:
        return total
    return 0


def test_statement_at_reads_whole_statements_and_falls_back() -> None:
    first = _sample.__code__.co_firstlineno
    assert statement_at(f"{__file__}:{first + 1}", "x") == "total = sum(\n    [1, 2],\n)"
    assert statement_at(f"{__file__}:{first + 2}", "x") == "total = sum(\n    [1, 2],\n)"
    assert statement_at(f"{__file__}:{first + 4}", "x") == "if total > 2:"  # the header only
    assert statement_at("/no/such/file.py:3", "recorded line") == "recorded line"
    assert statement_at("no line number", "recorded line") == "recorded line"
