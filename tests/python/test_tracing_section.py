"""`lw.tracing(...)`: any section of code, several models, code outside modules."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from small_models import Discriminator, Generator
from torch import nn

import lens_widget as lw
from model_zoo import language


@pytest.fixture(scope="module")
def gpt2():
    case = language.gpt2()
    return case.model.eval(), case.args, case.kwargs


def lm_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def op_edges(log: lw.ModelLog) -> set[tuple[str, str]]:
    ops = {n.label for n in log.ops}
    return {(p, n.label) for n in log.ops for p in n.parents if p in ops}


def test_gpt2_forward_and_loss_outside_the_model(gpt2):
    model, args, kwargs = gpt2
    ids = args[0]
    reference = lw.trace(model, args, kwargs)
    with lw.tracing(model) as t:
        out = model(*args, **kwargs)
        loss = lm_loss(out.logits, ids) * 2 + 1e-4 * model.lm_head.weight.pow(2).sum()
    log = t.log
    assert isinstance(log, lw.ModelLog)
    assert log.model_class == "section: GPT2LMHeadModel"
    assert log.output is None and log.outputs == []
    # The model's ops: labelled and linked exactly as lw.trace labels the same forward.
    n = len(reference.ops)
    assert log.labels[:n] == reference.labels
    assert [o.module for o in log.ops[:n]] == [o.module for o in reference.ops]
    assert op_edges(reference) <= op_edges(log)
    # Addresses as lw.trace gives them.
    assert log["transformer.h.1.mlp"].label == reference["transformer.h.1.mlp"].label
    assert log["transformer.wte.weight"].kind == "param"  # tied to lm_head.weight
    assert [n.label for n in log.inputs] == ["input.0", "input.attention_mask"]
    # The loss: at the top level, from this file, reading the model's logits and the ids.
    loss_ops = log.ops[n:]
    assert {o.module for o in loss_ops} == {""}
    assert all(o.module_stack == () for o in loss_ops)
    assert all(o.source.startswith(__file__) for o in loss_ops)
    ce = next(o for o in loss_ops if o.func == "cross_entropy")
    assert "lm_loss" not in ce.source_code and "cross_entropy" in ce.source_code
    assert torch.equal(log.ops[-1].activation, loss.detach())
    targets = log[log[ce.parents[1]].parents[0]]  # ids[:, 1:] -> flatten -> loss
    assert targets.func == "__getitem__" and targets.parents == ["input.0"]
    assert log.modules[""].n_ops == len(log.ops)
    assert all(o.feeds_output for o in log.ops)  # a section has no output: nothing faded
    # every op replays but those inside torch.vmap (transformers 4.5x's masks: no values)
    assert log.validate().checked == len([o for o in log.ops if o.no_values is None])


def test_a_section_that_only_calls_the_model_matches_trace(gpt2):
    model, args, kwargs = gpt2
    reference = lw.trace(model, args, kwargs)
    with lw.tracing(model) as t:
        model(*args, **kwargs)
    log = t.log
    assert log.labels == reference.labels
    assert op_edges(log) == op_edges(reference)
    assert [(o.label, o.parents, o.shape) for o in log.ops] == [
        (o.label, o.parents, o.shape) for o in reference.ops
    ]
    assert list(log.modules) == list(reference.modules)
    assert {a: m.n_ops for a, m in log.modules.items()} == {
        a: m.n_ops for a, m in reference.modules.items()
    }


def test_two_models_by_keyword():
    torch.manual_seed(0)
    gen, disc = Generator(), Discriminator()
    z = torch.randn(3, 4)
    with lw.tracing(gen=gen, disc=disc) as t:
        fake = gen(z)
        score = disc(fake)
        loss = -torch.log(score).mean()
    log = t.log
    assert log.model_class == "section: gen=Generator, disc=Discriminator"
    assert {"gen", "gen.layer1", "gen.layer2", "disc", "disc.fc"} <= set(log.modules)
    assert log.modules["gen"].parent == "" and log.modules["disc.fc"].parent == "disc"
    assert log.modules[""].class_name == "section"
    assert log["gen.layer1.weight"].kind == "param"
    assert log["disc.fc.bias"].kind == "param"
    assert [n.label for n in log.inputs] == ["input.gen.0"]
    assert log["gen.layer1"].module == "gen.layer1"
    # disc read what gen produced; the loss, outside both, read disc's output.
    fc = log["disc.fc"]
    assert fc.parents[0] == log["gen"].label
    log_op = next(o for o in log.ops if o.func == "log")
    assert log_op.module == "" and log_op.parents == [log["disc"].label]
    assert torch.equal(log.ops[-1].activation, loss.detach())
    assert log.n_params == sum(p.numel() for m in (gen, disc) for p in m.parameters())
    assert log.validate().checked == len(log.ops)


def test_several_positional_modules_are_named_by_class():
    a, b, c = nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()
    x = torch.randn(1, 2)
    with lw.tracing(a, b, c) as t:
        c(b(a(x)))
    log = t.log
    assert log.model_class == "section: linear=Linear, linear_2=Linear, relu=ReLU"
    assert [m for m in log.modules if m] == ["linear", "linear_2", "relu"]
    assert log["linear_2.weight"].kind == "param"
    # a keyword name is kept; a positional module of the same class steps aside
    with lw.tracing(a, linear=b) as t2:
        a(b(x))
    assert set(t2.log.modules) == {"", "linear", "linear_2"}
    assert t2.log["linear.weight"].kind == "param"
    assert t2.log["linear"].parents == ["input.linear.0", "linear.weight", "linear.bias"]


def test_bad_module_arguments_raise_clear_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        lw.tracing(lambda x: x)
    with pytest.raises(ValueError, match="given twice"):
        lw.tracing(m, other=m)
    with pytest.raises(ValueError, match="not an identifier"):
        lw.tracing(**{"a.b": m})
    with pytest.raises(ValueError, match="save='everything'"):
        lw.tracing(m, save="everything")


def test_plain_code_without_modules_and_input_names():
    x = torch.randn(3)
    weights = [torch.randn(3)]
    with lw.tracing() as t:
        y = torch.sin(x) * weights[0]  # x by its variable; weights[0] by the op using it
        z = y.sum()
    log = t.log
    assert log.model_class == "section"
    assert list(log.modules) == [""]
    assert [n.label for n in log.inputs] == ["input.x", "input.mul"]
    assert log["input.x"].source.startswith(__file__)
    assert [o.func for o in log.ops] == ["sin", "mul", "sum"]
    assert log.ops[1].parents == ["sin_1_1", "input.mul"]
    assert torch.equal(log.ops[-1].activation, z)
    assert log.n_params == 0
    assert log.validate().checked == 3


def test_a_module_not_given_is_named_by_its_class():
    model = nn.Linear(4, 3)
    loss_fn = nn.CrossEntropyLoss()
    x, labels = torch.randn(2, 4), torch.tensor([0, 2])
    with lw.tracing(model) as t:
        loss = loss_fn(model(x), labels)
    log = t.log
    info = log.modules["<CrossEntropyLoss>"]
    assert info.parent == "" and info.class_name == "CrossEntropyLoss"
    ce = next(o for o in log.ops if o.func == "cross_entropy")
    assert ce.module == "<CrossEntropyLoss>"
    assert ce.parents == [log.ops[0].label, "input.labels"]
    assert torch.equal(log.ops[-1].activation, loss.detach())


def test_a_tensor_first_used_inside_a_module_stays_a_const():
    class WithTable(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.arange(4.0)  # an attribute, no buffer

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.table

    model = WithTable()
    x = torch.ones(4)
    with lw.tracing(model) as t:
        model(x)
    kinds = {n.label: n.kind for n in t.log.nodes if n.kind != "op"}
    assert kinds == {"input.0": "input", "const_1": "const"}
    traced = lw.trace(model, x)
    assert kinds == {n.label: n.kind for n in traced.nodes if n.kind in ("input", "const")}
