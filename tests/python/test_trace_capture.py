"""Every kind of torch call a forward pass can make is recorded, with its sources."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lens_widget as lw


class EveryKindOfCall(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)  # F.linear inside a module
        y = torch.tanh(y)  # torch.*
        y = F.gelu(y)  # torch.nn.functional.*
        y = y.softmax(-1)  # Tensor method
        y = y + 1  # operator
        y = y @ torch.eye(4)  # matmul operator, factory call
        y = y[:, :2]  # getitem
        z = torch.zeros(3, 4)  # factory call with no tensor input
        z[:, :2] = y  # setitem
        z.mul_(self.scale)  # in-place method, buffer as input
        z += 1  # in-place operator
        mask = z > 1.5  # non-differentiable comparison
        idx = z.argmax(-1)  # non-differentiable
        return helper_outside_modules(z, mask, idx)


def helper_outside_modules(z: torch.Tensor, mask: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, z, -z) + idx.unsqueeze(-1).float()


@pytest.fixture
def log() -> lw.ModelLog:
    torch.manual_seed(0)
    return lw.trace(EveryKindOfCall(), torch.randn(3, 4))


def test_every_call_kind_is_an_op(log):
    funcs = [op.func for op in log.ops]
    assert funcs == [
        "linear", "tanh", "gelu", "softmax", "add", "eye", "matmul", "__getitem__",
        "zeros", "__setitem__", "mul_", "add_", "gt", "argmax", "neg", "where",
        "unsqueeze", "float", "add",
    ]  # fmt: skip


def test_factory_calls_have_no_parents_and_are_not_from_input(log):
    for label in ("eye_1_6", "zeros_1_9"):
        op = log[label]
        assert op.parents == []
        assert op.from_input is False


def test_inplace_ops_are_flagged_and_chain_through_the_written_tensor(log):
    setitem, mul_, add_ = log["setitem_1_10"], log["mul_1_11"], log["add_2_12"]
    assert setitem.parents == ["zeros_1_9", "getitem_1_8"]
    assert mul_.parents == ["setitem_1_10", "scale"]
    assert add_.parents == ["mul_1_11"]
    assert all(op.inplace for op in (setitem, mul_, add_))
    assert not log["tanh_1_2"].inplace


def test_sources_are_named_nodes(log):
    kinds = {n.label: n.kind for n in log.nodes if n.kind != "op"}
    assert kinds == {
        "input.0": "input",
        "fc.weight": "param",
        "fc.bias": "param",
        "scale": "buffer",
        "output": "output",
    }
    assert log.graph.in_degree("input.0") == 0
    assert log.graph.out_degree("output") == 0
    assert log["output"].parents == [log.ops[-1].label]


def test_ops_outside_any_module_have_empty_module(log):
    assert log["linear_1_1"].module == "fc"
    assert log["where_1_16"].module == ""
    assert log["where_1_16"].source.endswith(
        f":{helper_outside_modules.__code__.co_firstlineno + 1}"
    )
    assert "torch.where" in log["where_1_16"].source_code


def test_tensor_methods_returning_non_tensors_are_not_ops():
    class Meta(nn.Module):
        def forward(self, x):
            n = x.shape[0] * x.size(1) + x.dim() + int(x.sum().item() > 0)
            return x.reshape(n // 4, -1) if n > 0 else x

    log = lw.trace(Meta(), torch.ones(2, 2))
    assert [op.func for op in log.ops] == ["sum", "reshape"]


def test_multi_output_ops_keep_every_output():
    class Split(nn.Module):
        def forward(self, x):
            a, b = x.split(2, dim=-1)
            values, indices = x.max(-1)
            return a * b + values.unsqueeze(-1) + indices.unsqueeze(-1)

    x = torch.randn(3, 4)
    log = lw.trace(Split(), x)
    split = log["split_1_1"]
    assert split.shapes == ((3, 2), (3, 2))
    assert len(split.activations) == 2
    assert torch.equal(split.activations[1], x[:, 2:])
    mul = log["mul_1_3"]
    assert [(a.parent, a.output_index) for a in mul.parent_args] == [
        ("split_1_1", 0),
        ("split_1_1", 1),
    ]
    assert log["max_1_2"].shapes == ((3,), (3,))
    log.validate()


def test_calls_from_other_threads_are_not_recorded():
    seen_in_thread: list[torch.Tensor] = []

    class SpawnsThread(nn.Module):
        def forward(self, x):
            worker = threading.Thread(target=lambda: seen_in_thread.append(torch.ones(2) * 3))
            worker.start()
            worker.join()
            return x + 1

    log = lw.trace(SpawnsThread(), torch.zeros(2))
    assert seen_in_thread and torch.equal(seen_in_thread[0], torch.full((2,), 3.0))
    assert [op.func for op in log.ops] == ["add"]


def test_constant_tensors_captured_from_outside_become_const_sources():
    table = torch.arange(4.0)

    class UsesGlobal(nn.Module):
        def forward(self, x):
            return x * table

    log = lw.trace(UsesGlobal(), torch.ones(4))
    const = [n for n in log.nodes if n.kind == "const"]
    assert len(const) == 1 and torch.equal(const[0].activation, table)
    assert log.ops[0].parents == ["input.0", const[0].label]


def test_inference_tensors_as_inputs_and_inside_forward():
    with torch.inference_mode():
        x = torch.randn(2, 3)
    with torch.no_grad():
        log = lw.trace(nn.Linear(3, 3), x)
    assert log.validate().checked == 1

    class InferenceInside(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            with torch.inference_mode():
                y = self.fc(x)
            return y * 2

    with torch.no_grad():
        log = lw.trace(InferenceInside(), torch.randn(2, 3))
    assert [op.func for op in log.ops] == ["linear", "mul"]


def test_compiled_modules_are_traced_eagerly():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    compiled = torch.compile(model)
    log = lw.trace(compiled, torch.randn(2, 3))
    assert [op.func for op in log.ops] == ["linear", "relu"]
    assert log.model_class == "Sequential"
