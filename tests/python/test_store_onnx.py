"""log.to_onnx: a valid ONNX picture of the trace, standard op types where torch maps directly."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
import torch
from function_module import FunctionModule

import lens_widget as lw
from lens_widget.store.onnx_export import CUSTOM_DOMAIN, node_name
from model_zoo import TEST_MODELS as BUILDERS

onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def export(log, tmp_path, **kwargs):
    path = tmp_path / "model.onnx"
    assert log.to_onnx(path, **kwargs) == path
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    return model


def trace(name):
    case = BUILDERS[name]()
    return lw.trace(case.model, case.args, case.kwargs)


def by_label(model):
    return {meta(n)["label"]: n for n in model.graph.node}


def meta(onnx_node):
    return {p.key: p.value for p in onnx_node.metadata_props}


def typed_values(model):
    """Every value with a declared type and shape: inputs, outputs, edges, initializers."""
    infos = [*model.graph.input, *model.graph.output, *model.graph.value_info]
    values = {v.name: v.type.tensor_type for v in infos}
    values.update({t.name: t for t in model.graph.initializer})
    return values


@pytest.mark.parametrize("name", ["gpt2", "small_cnn", "resnet", "llama", "lstm"])
def test_zoo_models_export_valid_onnx(name, tmp_path):
    log = trace(name)
    model = export(log, tmp_path)
    assert len(model.graph.node) == len(log.ops) + len(log.outputs)  # one node per op
    assert [meta(n)["label"] for n in model.graph.node] == [
        n.label for n in log.nodes if n.kind in ("op", "output")
    ]
    # every edge carries a dtype and a shape
    values = typed_values(model)
    for onnx_node in model.graph.node:
        for name_ in [*onnx_node.input, *onnx_node.output]:
            if name_:
                assert name_ in values, (onnx_node.name, name_)
    for info in model.graph.value_info:
        assert info.type.tensor_type.elem_type != onnx.TensorProto.UNDEFINED, info.name
        assert info.type.tensor_type.HasField("shape"), info.name
    assert "not a runnable model" in model.doc_string


def test_standard_op_types_where_torch_maps_directly(tmp_path):
    log = trace("small_cnn")
    nodes = by_label(export(log, tmp_path))
    types = {n.func: nodes[n.label].op_type for n in log.ops}
    assert types["conv2d"] == "Conv" and types["batch_norm"] == "BatchNormalization"
    assert types["relu"] == "Relu" and types["max_pool2d"] == "MaxPool"
    assert types["linear"] == "Gemm" and types["flatten"] == "Reshape"
    assert types["mean"] == "mean"  # no direct ONNX op: the custom domain, torch's name
    conv = nodes[next(n.label for n in log.ops if n.func == "conv2d")]
    assert conv.domain == ""
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in conv.attribute}
    assert attributes["pads"] == [1, 1, 1, 1] and attributes["group"] == 1
    gemm = nodes[next(n.label for n in log.ops if n.func == "linear")]
    assert [a.name for a in gemm.attribute] == ["transB"]
    assert nodes[next(n.label for n in log.ops if n.func == "mean")].domain == CUSTOM_DOMAIN


def test_transformer_ops(tmp_path):
    log = trace("gpt2")
    model = export(log, tmp_path)
    nodes = by_label(model)
    counts = Counter(nodes[n.label].op_type for n in log.ops)
    assert counts["LayerNormalization"] == 5 and counts["Gather"] == 2
    assert counts["Add"] >= 8 and counts["Transpose"] >= 4 and counts["Reshape"] >= 10
    # the custom domain keeps torch's name and its arguments as attributes
    sdpa = nodes[next(n.label for n in log.ops if n.func == "scaled_dot_product_attention")]
    assert sdpa.domain == CUSTOM_DOMAIN and sdpa.op_type == "scaled_dot_product_attention"
    assert CUSTOM_DOMAIN in {o.domain for o in model.opset_import}
    # x * 0.5: the number becomes a scalar constant input
    mul = nodes[next(n.label for n in log.ops if n.func == "mul" and len(n.parent_args) == 1)]
    assert mul.op_type == "Mul" and len(mul.input) == 2
    assert mul.input[1] in {t.name for t in model.graph.initializer}


def test_names_and_metadata_show_the_module_nesting(tmp_path):
    log = trace("gpt2")
    nodes = by_label(export(log, tmp_path))
    node = next(n for n in log.ops if n.module == "transformer.h.1.attn.c_attn")
    onnx_node = nodes[node.label]
    assert onnx_node.name == f"/transformer/h.1/attn/c_attn/{node.label}" == node_name(node)
    info = meta(onnx_node)
    assert info["module"] == "transformer.h.1.attn.c_attn" and info["func"] == node.func
    assert info["module_stack"].startswith("transformer:1 > transformer.h.1:1")
    assert node.label in onnx_node.doc_string and node.source in onnx_node.doc_string


def test_weights_are_inputs_by_default_and_initializers_on_request(tmp_path):
    case = BUILDERS["small_cnn"]()
    log = lw.trace(case.model, case.args)
    params = dict(case.model.named_parameters())
    light = export(log, tmp_path)
    assert set(params) <= {i.name for i in light.graph.input}
    assert not set(params) & {t.name for t in light.graph.initializer}
    heavy = export(log, tmp_path, weights=True)
    initializers = {t.name: t for t in heavy.graph.initializer}
    for name, param in params.items():
        values = onnx.numpy_helper.to_array(initializers[name])
        assert (values == param.detach().numpy()).all(), name
    assert {i.name for i in heavy.graph.input} == {"input.0"}


def test_dtypes_on_edges(tmp_path):
    def mixed(x):
        return x.to(torch.bfloat16) * 2, (x > 0).long(), x.half().exp()

    log = lw.trace(FunctionModule(mixed), torch.randn(2, 3))
    values = typed_values(export(log, tmp_path))
    elem = onnx.TensorProto
    expected = {"to_1_1": elem.BFLOAT16, "gt_1_3": elem.BOOL, "long_1_4": elem.INT64}
    for label, elem_type in expected.items():
        assert values[label].elem_type == elem_type, label
    assert [d.dim_value for d in values["gt_1_3"].shape.dim] == [2, 3]


def test_partial_trace_exports(tmp_path):
    def fails(x):
        return torch.relu(x).view(7)

    with pytest.raises(RuntimeError) as info:
        lw.trace(FunctionModule(fails), torch.randn(2, 3))
    model = export(info.value.lens_log, tmp_path)
    assert [meta(n)["label"] for n in model.graph.node] == ["relu_1_1", "view_1_2"]


def test_an_op_that_raised_is_a_custom_node_without_outputs(tmp_path):
    """A standard op type (MatMul) needs an output; the op that raised made none."""

    def fails(x):
        return torch.relu(x) @ torch.ones(5, 5)

    with pytest.raises(RuntimeError) as info:
        lw.trace(FunctionModule(fails), torch.randn(2, 4))
    model = export(info.value.lens_log, tmp_path)  # passes the checker
    last = model.graph.node[-1]
    assert (last.op_type, last.domain, list(last.output)) == ("matmul", "lens_widget.torch", [])
    assert "raised RuntimeError" in last.doc_string


def test_without_onnx_the_error_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    log = lw.trace(FunctionModule(torch.relu), torch.randn(3))
    with pytest.raises(ImportError, match=r"pip install lens_widget\[onnx\]"):
        log.to_onnx(tmp_path / "x.onnx")


def test_op_mapping_with_attributes(tmp_path):
    weight = torch.randn(10, 4)

    def ops(x, ids):
        e = torch.nn.functional.embedding(ids, weight)  # (2, 3, 4)
        s = torch.softmax(e @ e.transpose(1, 2), dim=-1)
        g = torch.nn.functional.gelu(e, approximate="tanh")
        c = torch.cat([g, torch.sigmoid(e)], dim=2).permute(2, 0, 1)
        return 1 - torch.tanh(c), torch.where(s > 0.5, s, 0.0), x / 2

    log = lw.trace(FunctionModule(ops), (torch.randn(3), torch.randint(0, 10, (2, 3))))
    model = export(log, tmp_path)
    nodes = by_label(model)

    def onnx_node(func):
        return nodes[next(n.label for n in log.ops if n.func == func)]

    def attributes(func):
        return {a.name: onnx.helper.get_attribute_value(a) for a in onnx_node(func).attribute}

    expected = {
        "embedding": "Gather", "softmax": "Softmax", "gelu": "Gelu", "cat": "Concat",
        "permute": "Transpose", "transpose": "Transpose", "matmul": "MatMul", "tanh": "Tanh",
        "sigmoid": "Sigmoid", "__rsub__": "Sub", "where": "Where", "gt": "Greater", "div": "Div",
    }  # fmt: skip
    for func, op_type in expected.items():
        assert onnx_node(func).op_type == op_type, func
    assert attributes("softmax") == {"axis": -1}
    assert attributes("gelu") == {"approximate": b"tanh"}
    assert attributes("cat") == {"axis": 2}
    assert attributes("permute") == {"perm": [2, 0, 1]}
    assert attributes("transpose") == {"perm": [0, 2, 1]}
    embedding = onnx_node("embedding")
    assert list(embedding.input) == ["const_1", "input.1"]  # data, then indices
    rsub = onnx_node("__rsub__")
    assert rsub.input[1] == next(n.label for n in log.ops if n.func == "tanh")  # 1 - tanh(c)


def test_large_weights_go_to_an_external_data_file(tmp_path, monkeypatch):
    monkeypatch.setattr("lens_widget.store.onnx_export._EXTERNAL_DATA_BYTES", 1024)
    case = BUILDERS["small_cnn"]()
    log = lw.trace(case.model, case.args)
    path = log.to_onnx(tmp_path / "cnn.onnx", weights=True)
    assert (tmp_path / "cnn.onnx.data").stat().st_size > 1024
    onnx.checker.check_model(str(path))
    model = onnx.load(str(path))
    weight = next(t for t in model.graph.initializer if t.name == "head.weight")
    values = onnx.numpy_helper.to_array(weight)
    assert (values == case.model.head.weight.detach().numpy()).all()


def test_addmm_is_gemm_and_gather_is_gather_elements(tmp_path):
    """GPT-2's Conv1D (torch.addmm) and torch.gather were custom nodes a viewer cannot read."""
    bias, weight = torch.randn(5), torch.randn(4, 5)

    def ops(x, index):
        y = torch.addmm(bias, x, weight, beta=0.5)  # (3, 5)
        return torch.gather(y, 1, index)

    log = lw.trace(FunctionModule(ops), (torch.randn(3, 4), torch.tensor([[0, 4], [1, 1], [2, 3]])))
    nodes = by_label(export(log, tmp_path))
    addmm, gather = (
        nodes[next(n.label for n in log.ops if n.func == f)] for f in ("addmm", "gather")
    )
    assert (addmm.op_type, addmm.domain) == ("Gemm", "")
    assert list(addmm.input) == ["input.0", "const_2", "const_1"]  # mat1, mat2, then input
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in addmm.attribute}
    assert attrs == {"alpha": 1.0, "beta": 0.5}
    assert (gather.op_type, gather.domain) == ("GatherElements", "")
    assert [a.i for a in gather.attribute if a.name == "axis"] == [1]
    assert list(gather.input) == [addmm.output[0], "input.1"]
