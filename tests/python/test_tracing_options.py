"""`lw.tracing(save=, timing=, intervene=)` work in a section as in lw.trace; a section log
is shown by the widget and kept by log.save."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lens_widget as lw
from lens_widget.widget.payload import build_payload
from model_zoo import language


@pytest.fixture(scope="module")
def gpt2():
    case = language.gpt2()
    return case.model.eval(), case.args[0]


def step(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    logits = model(ids).logits
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


def test_save_list_by_module_function_and_label(gpt2):
    model, ids = gpt2
    with lw.tracing(model, save=["transformer.h.0.mlp", "cross_entropy"]) as t:
        step(model, ids)
    log = t.log
    saved = {o.label for o in log.ops if o.saved}
    expected = {o.label for o in log.ops if o.module.startswith("transformer.h.0.mlp")}
    expected |= {o.label for o in log.ops if o.func == "cross_entropy"}
    assert saved == expected and len(expected) > 5


def test_unmatched_save_names_warn_at_the_with_statement(gpt2):
    model, ids = gpt2
    with (
        pytest.warns(UserWarning, match=r"\['nope'\]") as caught,
        lw.tracing(model, save=["cross_entropy", "nope"]),
    ):
        step(model, ids)
    assert [w.filename for w in caught if "nope" in str(w.message)] == [__file__]


def test_intervene_by_module_address_in_a_section(gpt2):
    model, ids = gpt2
    with lw.tracing(model) as clean:
        clean_loss = step(model, ids)
    with lw.tracing(model, intervene={"transformer.h.1.mlp": lambda t: t * 0}) as t:
        loss = step(model, ids)
    log = t.log
    assert log.labels == clean.log.labels  # fn's own calls are not recorded
    assert log["transformer.h.1.mlp"].intervened
    assert not torch.equal(loss, clean_loss)
    assert torch.equal(log.ops[-1].activation, loss)
    assert [o.label for o in log.ops if o.intervened] == [log["transformer.h.1.mlp"].label]


def test_intervene_on_an_op_outside_the_model(gpt2):
    model, ids = gpt2
    with lw.tracing(model) as clean:
        step(model, ids)
    flatten = [o.label for o in clean.log.ops if o.func == "flatten" and o.module == ""][0]
    # the logits the loss reads, zeroed: cross entropy of uniform logits is log(vocab)
    with lw.tracing(model, intervene={flatten: lambda t: t * 0}) as t:
        loss = step(model, ids)
    vocab = model.config.vocab_size
    torch.testing.assert_close(loss, torch.log(torch.tensor(float(vocab))))
    assert t.log[flatten].intervened


def test_an_unmatched_intervention_raises_after_the_block(gpt2):
    model, ids = gpt2
    with lw.tracing(model) as clean:
        step(model, ids)
    targets = {"transformer.h.9": lambda t: t}
    with (
        pytest.raises(ValueError, match="transformer.h.9"),
        lw.tracing(model, intervene=targets) as t,
    ):
        step(model, ids)
    assert len(t.log.ops) == len(clean.log.ops) > 50  # the whole log is kept


def test_timing_in_a_section(gpt2):
    model, ids = gpt2
    with lw.tracing(model, timing=True) as t:
        step(model, ids)
    assert all(o.time_ms is not None and o.time_ms >= 0 for o in t.log.ops)
    assert t.log.module_totals[""].time_ms is not None


def test_widget_payload_shows_the_loss_at_the_top_level(gpt2):
    model, ids = gpt2
    with lw.tracing(net=model) as t:
        step(model, ids)
    payload = build_payload(t.log)
    assert payload["modelClass"] == "section: net=GPT2LMHeadModel"
    nodes = {n["id"]: n for n in payload["unrolled"]["nodes"]}
    ce = next(n for n in nodes.values() if n["func"] == "cross_entropy")
    assert ce["module"] == "" and ce["groups"] == []
    assert nodes[t.log["net.lm_head"].label]["groups"] == ["net:1", "net.lm_head:1"]
    assert {m["address"] for m in payload["modules"]} >= {"", "net", "net.transformer"}
    widget = lw.LensWidget.from_log(t.log)
    assert widget.model_log is t.log and widget.graph["nOps"] == len(t.log.ops)


def test_a_section_log_saves_and_loads(gpt2, tmp_path):
    model, ids = gpt2
    with lw.tracing(model) as t:
        step(model, ids)
    t.log.save(tmp_path / "run")
    loaded = lw.load(tmp_path / "run")
    assert loaded.model_class == t.log.model_class
    assert loaded.labels == t.log.labels
    assert torch.equal(loaded.ops[-1].activation, t.log.ops[-1].activation)
    assert loaded.validate().checked == len(loaded.ops)


def test_modules_not_given_keep_their_own_names_and_siblings_apart():
    """A section given no modules names what it meets "<Class>" under its caller, with the
    submodules as the model names them: two Linears of one Sequential are two modules (two
    layers), not one module called twice."""
    net, x = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)), torch.randn(2, 4)
    with lw.tracing() as t:
        net(x).sum()
    log = t.log
    assert {a: m.n_passes for a, m in log.modules.items()} == {
        "": 1, "<Sequential>": 1, "<Sequential>.0": 1, "<Sequential>.1": 1, "<Sequential>.2": 1,
    }  # fmt: skip
    assert [op.label for op in log.ops] == ["linear_1_1", "relu_1_2", "linear_2_3", "sum_1_4"]
    assert log.structure == "feedforward"


def test_a_module_built_anew_on_each_call_folds_into_passes():
    class Rebuilds(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(3):
                x = nn.ReLU()(x) - 0.1  # a new module each time, the old one gone
            return x

    log = lw.trace(Rebuilds(), torch.randn(2, 3))
    assert log.modules["<ReLU>"].n_passes == 3
    assert [op.label for op in log.ops if op.func == "relu"] == [f"relu_1_1:{k}" for k in (1, 2, 3)]


def test_sources_left_uncopied_lose_only_the_values_written_since():
    """Tracing(copy_sources=False) (lw.Monitor's when it keeps no log): a parameter the
    optimizer writes in the block keeps no value rather than a wrong one; an unwritten
    parameter keeps its value, and an input written in place is still copied first."""
    from lens_widget.capture.tracing import Tracing

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    model[1].bias.requires_grad_(False)  # the optimizer leaves it as it is
    x = torch.randn(5, 3)
    x_before = x.clone()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    logs, weights_before = {}, {}
    for copy_sources in (True, False):
        weights_before[copy_sources] = model[0].weight.detach().clone()
        with Tracing(
            (model,), {}, save="all", grads=False, timing=False, intervene=None,
            copy_sources=copy_sources,
        ) as t:  # fmt: skip
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
            x.mul_(2)
        logs[copy_sources] = t.log
        x.copy_(x_before)
    copied, uncopied = logs[True], logs[False]
    assert torch.equal(copied["0.weight"].activation, weights_before[True])
    assert uncopied["0.weight"].activation is None  # written by the optimizer
    assert torch.equal(uncopied["1.bias"].activation, model[1].bias)
    for log in (copied, uncopied):
        assert torch.equal(log["input.0"].activation, x_before)
        assert [o.func for o in log.ops] == [o.func for o in copied.ops]
