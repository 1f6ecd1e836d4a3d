"""Modules and their passes, labels, the rolled view, and indexing a log."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw


class LoopOverLinear(nn.Module):
    """One Linear applied five times: five passes of one layer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(5):
            x = torch.relu(self.fc(x))
        return x


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x).sigmoid()


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.shared = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        x = self.shared(x)
        return self.shared(x) * 2  # reused: two passes


def test_loop_over_one_linear_is_one_layer_with_five_passes():
    log = lw.trace(LoopOverLinear(), torch.randn(2, 3))
    assert [op.label for op in log.ops if op.func == "linear"] == [
        f"linear_1_1:{p}" for p in range(1, 6)
    ]
    assert {op.layer for op in log.ops} == {"linear_1_1", "relu_1_2"}
    rolled = log.rolled_graph
    assert rolled.nodes["linear_1_1"]["n_passes"] == 5
    assert rolled.edges["linear_1_1", "relu_1_2"]["passes"] == [1, 2, 3, 4, 5]
    assert rolled.edges["relu_1_2", "linear_1_1"]["passes"] == [2, 3, 4, 5]
    assert rolled.edges["input.0", "linear_1_1"]["passes"] == [1]
    # into the output, which runs once: the pass of the loop it reads (the last), not "1"
    assert rolled.edges["relu_1_2", "output"]["passes"] == [5]
    assert log.graph.number_of_nodes() == 10 + 4  # ops + input, weight, bias, output
    assert log.structure == "recurrent"


def test_module_stack_and_passes():
    log = lw.trace(Nested(), torch.randn(1, 4))
    first = log.ops[0]
    assert first.module == "blocks.0.inner"
    assert first.module_stack == (("blocks.0", 1), ("blocks.0.inner", 1))
    shared_ops = [op for op in log.ops if op.module_stack[:1] == (("shared", 2),)]
    assert [op.func for op in shared_ops] == ["linear", "sigmoid"]
    assert shared_ops[0].pass_label == "shared.inner:2"
    assert log.modules["shared"].n_passes == 2
    assert log.modules["shared"].parent == ""
    assert log.modules["blocks.0.inner"].parent == "blocks.0"
    assert log.modules["blocks.1"].class_name == "Block"
    assert log.modules[""].n_ops == len(log.ops)
    assert log.modules["blocks.0"].n_ops == 2


class _Recursive(torch.nn.Module):
    """Calls itself once more inside its own call: its inner call's ops are in both."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, again: bool = True) -> torch.Tensor:
        x = torch.relu(self.lin(x))
        return self(x, False) + 1 if again else x


def test_a_modules_ops_count_every_call_they_ran_in() -> None:
    """n_ops of a module sums its calls' ops (read from the ops' module stacks): a
    recursive call's ops count in the inner call and the outer one, a submodule's in
    each call of it, the root's are all."""
    model = torch.nn.Sequential(_Recursive(), torch.nn.ReLU())
    for save in (None, "all", lambda op: op.func == "relu"):  # filled on read and at once
        log = lw.trace(model, torch.randn(2, 4), save=save)
        outer = [op for op in log.ops if op.module_stack[:1] == (("0", 1),)]
        inner = [op for op in log.ops if op.module_stack[1:2] == (("0", 2),)]
        assert (len(outer), len(inner)) == (5, 2)  # linear, relu; linear, relu, add
        modules = {address: (m.n_passes, m.n_ops) for address, m in log.modules.items()}
        assert modules == {"": (1, 6), "0": (2, 7), "0.lin": (2, 2), "1": (1, 1)}


def test_module_outputs_are_addressable_per_pass():
    log = lw.trace(Nested(), torch.randn(1, 4))
    assert log["blocks.0"].func == "sigmoid" and log["blocks.0"].module == "blocks.0"
    assert log["shared:1"].label == "sigmoid_3_6:1"
    assert log["shared:2"].label == "sigmoid_3_6:2"
    assert log["shared"] is log["shared:2"]  # the last pass
    assert torch.equal(log["shared:2"].activation, torch.sigmoid(log["linear_3_5:2"].activation))
    with pytest.raises(KeyError, match="no pass"):
        log["shared:3"]
    with pytest.raises(KeyError, match="did you mean"):
        log["blocks.0.iner"]


def test_indexing_by_position_label_and_module():
    log = lw.trace(Nested(), torch.randn(1, 4))
    assert log[0] is log.ops[0] and log[-1] is log.ops[-1]
    assert log[log.ops[3].label] is log.ops[3]
    assert "blocks.1" in log and "nope" not in log
    with pytest.raises(TypeError):
        log[1.5]  # type: ignore[index]


def test_labels_are_unique_readable_and_stable_across_runs():
    model = Nested()
    x = torch.randn(1, 4)
    first, second = lw.trace(model, x), lw.trace(model, x)
    assert first.labels == second.labels
    labels = [n.label for n in first.nodes]
    assert len(labels) == len(set(labels))
    for op in first.ops:
        base = op.label.split(":")[0]
        func, kind_index, layer_index = base.rsplit("_", 2)
        assert func == op.func.strip("_") and kind_index.isdigit() and layer_index.isdigit()
        assert (":" in op.label) == (op.n_passes > 1)


def test_same_line_two_calls_are_two_layers():
    class TwoAddsOneLine(nn.Module):
        def forward(self, a, b, c):
            return a + b + c

    log = lw.trace(TwoAddsOneLine(), (torch.ones(1), torch.ones(1), torch.ones(1)))
    assert log.labels == ["add_1_1", "add_2_2"]


def test_structure_branching_and_feedforward():
    class Branch(nn.Module):
        def forward(self, x):
            y = x.exp()
            return y.sin() + y.cos()

    class Chain(nn.Module):
        def forward(self, x):
            return x.exp().sin()

    assert lw.trace(Branch(), torch.ones(2)).structure == "branching"
    assert lw.trace(Chain(), torch.ones(2)).structure == "feedforward"


def test_a_module_returning_its_input_untouched_gets_an_identity_op():
    class Skip(nn.Module):
        def forward(self, x):
            return x  # no torch call: nothing to record but the module itself

    model = nn.Sequential(nn.Linear(2, 2), Skip(), nn.Identity(), nn.ReLU())
    log = lw.trace(model, torch.randn(1, 2))
    assert [(op.func, op.module) for op in log.ops] == [
        ("linear", "0"),
        ("identity", "1"),
        ("identity", "2"),
        ("relu", "3"),
    ]
    assert log["1"].parents == ["linear_1_1"] and log["relu_1_4"].parents == ["identity_2_3"]
    assert torch.equal(log["2"].activation, log["linear_1_1"].activation)
    assert log.validate().checked == 4


def test_labels_never_collide_with_parameter_names():
    class Collide(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.output = nn.Parameter(torch.ones(3))

        def forward(self, x):
            return x * self.output

    log = lw.trace(Collide(), torch.ones(3))
    labels = [n.label for n in log.nodes]
    assert len(labels) == len(set(labels)) == log.graph.number_of_nodes()
    assert log["output"].kind == "param" and log["output#2"].kind == "output"


@pytest.mark.parametrize("save", ["all", None, ["mul_1_1"], lambda op: True])
def test_a_parameter_named_like_an_earlier_op_gets_a_label_of_its_own(save):
    """A plain trace labels its nodes after the pass, the others as they are made: the same
    labels either way, a source named like a node made before it made unique."""

    class Named(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_parameter("mul_1_1", nn.Parameter(torch.ones(3)))

        def forward(self, x):
            y = x * 2  # the op mul_1_1, made before the parameter's source
            return y + self.mul_1_1

    log = lw.trace(Named(), torch.ones(3), save=save)
    assert [n.label for n in log.nodes] == ["input.0", "mul_1_1", "mul_1_1#2", "add_1_2", "output"]
    assert log["mul_1_1#2"].kind == "param" and log["add_1_2"].parents == ["mul_1_1", "mul_1_1#2"]


def test_helper_called_from_two_lines_is_two_layers_but_a_loop_folds():
    def rotate(t):
        return torch.cat((-t[..., 1:], t[..., :1]), dim=-1)

    def forward(q, k):
        q2, k2 = rotate(q), rotate(k)
        for _ in range(3):
            q2 = rotate(q2)
        return q2 + k2

    log = lw.trace(FunctionModule(forward), (torch.randn(2, 4), torch.randn(2, 4)))
    cats = [op for op in log.ops if op.func == "cat"]
    assert [op.n_passes for op in cats] == [1, 1, 3, 3, 3]
    assert log.structure == "recurrent"  # the loop; q and k alone would be branching


def test_indexing_by_pass_layer_and_numpy_positions():
    model = nn.Linear(2, 2)

    def twice(x):
        for _ in range(2):
            x = model(x)
        return x.relu()

    log = lw.trace(FunctionModule(twice), torch.randn(1, 2))
    assert log["relu_1_2:1"] is log["relu_1_2"]
    with pytest.raises(KeyError, match="ran 2 times"):
        log["linear_1_1"]
    assert log[np.int64(1)] is log.ops[1]
    with pytest.raises(IndexError, match="the log has 3 ops"):
        log[3]


def test_a_module_named_with_a_colon_is_found_by_its_address():
    class Named(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.d = nn.ModuleDict({"relu:out": nn.ReLU()})

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.d["relu:out"](x) * 2

    log = lw.trace(Named(), torch.randn(2, 3))
    assert log["d.relu:out"].label == "relu_1_1"
    assert log["d.relu:out:1"].label == "relu_1_1"  # with its pass, as any module
