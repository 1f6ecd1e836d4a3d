"""`lw.tracing(..., grads=True)`: a training step written as users write it (a loss and a
regulariser outside the model, several models, several backwards) keeps the gradients of
every op, names every leaf, and leaves `.grad` as an untraced step does."""

from __future__ import annotations

import copy

import pytest
import torch
from cleanup_checks import seed_all
from small_models import Discriminator, Generator
from torch import nn

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def regulariser(model: nn.Module) -> torch.Tensor:
    return sum(p.pow(2).sum() for p in model.parameters()) * 1e-4  # type: ignore[return-value]


def test_gpt2_step_with_a_loss_outside_the_model() -> None:
    case = TEST_MODELS["gpt2"]()
    model = case.model.train()
    twin = copy.deepcopy(model)
    (ids,) = case.args

    # The untraced step, with the gradient that reaches one module's output kept by a hook.
    seed_all(0)
    kept: dict[str, torch.Tensor] = {}

    def keep_output_grad(_module: nn.Module, _args: object, out: torch.Tensor) -> None:
        out.register_hook(lambda g: kept.setdefault("mlp", g.clone()))

    handle = twin.transformer.h[1].mlp.register_forward_hook(keep_output_grad)
    out = twin(ids, labels=ids)
    (out.loss * 2 + regulariser(twin)).backward()
    handle.remove()

    seed_all(0)
    with lw.tracing(model, save="all", grads=True) as t:
        out = model(ids, labels=ids)
        loss = out.loss * 2 + regulariser(model)
        loss.backward()
    log = t.log

    assert torch.equal(log["transformer.h.1.mlp"].grad, kept["mlp"])
    for name, p in model.named_parameters():
        reference = twin.get_parameter(name).grad
        assert torch.equal(p.grad, reference), name  # the user's .grad, bit-equal
        assert torch.equal(log.leaves[name].grad, reference), name
        assert torch.equal(log[name].grad, reference), name
    assert {n for n, leaf in log.leaves.items() if leaf.kind == "param" and leaf.received} == {
        n for n, _ in model.named_parameters()
    }
    # The loss and the regulariser ran outside the model: top-level ops with gradients.
    top = [op for op in log.ops if op.module == ""]
    assert {"pow", "sum", "mul", "add"} <= {op.func for op in top}
    assert all(op.grad is not None for op in top if op.requires_grad)
    (step,) = log.backward_passes
    assert step.call == "backward" and step.error is None
    assert step.source.endswith(f"{__file__.rsplit('/', 1)[-1]}:{_line_of('loss.backward()')}")
    graph = log.backward_graph
    assert {graph.nodes[n]["forward_op"] for n in step.nodes} >= {op.label for op in top[-2:]}
    leaves_fed = {graph.nodes[n]["leaf"] for n in graph if graph.nodes[n]["leaf"]}
    assert leaves_fed == {n for n, _ in model.named_parameters()}
    # The widget shows it: gradients in the payload, the switch's data behind it.
    payload = LensWidget.from_log(log).graph
    assert len(payload["gradients"]["backward"]) == graph.number_of_nodes()


def _line_of(code: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.strip() == code)


def gan_step(gen: Generator, disc: Discriminator, z: torch.Tensor, real: torch.Tensor) -> None:
    fake = gen(z)
    d_loss = disc(real).mean() - disc(fake.detach()).mean()
    d_loss.backward()
    g_loss = -disc(fake).mean()
    g_loss.backward()


def test_two_models_by_keyword_and_two_backwards() -> None:
    torch.manual_seed(0)
    gen, disc = Generator(), Discriminator()
    disc.unused = nn.Linear(6, 1)  # requires grad, never reached: the bug users hunt
    z, real = torch.randn(5, 4), torch.randn(5, 6)
    gen_twin, disc_twin = copy.deepcopy(gen), copy.deepcopy(disc)
    gan_step(gen_twin, disc_twin, z, real)

    with lw.tracing(gen=gen, disc=disc, grads=True) as t:
        gan_step(gen, disc, z, real)
    log = t.log

    assert [p.index for p in log.backward_passes] == [1, 2]
    for twin, model, prefix in ((gen_twin, gen, "gen"), (disc_twin, disc, "disc")):
        for name, p in model.named_parameters():
            assert (
                torch.equal(p.grad, twin.get_parameter(name).grad)
                if p.grad is not None
                else (twin.get_parameter(name).grad is None)
            )
            leaf = log.leaves[f"{prefix}.{name}"]
            assert leaf.kind == "param"
            assert leaf.received == (p.grad is not None)
            if p.grad is not None:
                assert torch.equal(leaf.grad, p.grad)
    # The generator got gradients only in the second pass (the first saw fake.detach()).
    first, second = log.leaves["gen.layer1.weight"].grads
    assert first is None and second is not None
    # disc.fc accumulated over both passes, as its .grad did.
    assert len([g for g in log.leaves["disc.fc.weight"].grads if g is not None]) == 2
    assert not log.leaves["disc.unused.weight"].received
    assert "gen.layer1" in log.modules and "disc.fc" in log.modules


def test_gradients_accumulated_into_zeroed_grads_leave_the_zeroing_intact() -> None:
    """zero_grad(set_to_none=False): the engine adds into .grad in place, a write no torch
    call shows. The saved zero_ values are copied before it: they stay zeros, no "could not
    see" warning, and the loop validates."""
    import warnings

    torch.manual_seed(0)
    model, x = nn.Linear(6, 2), torch.randn(4, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with lw.tracing(model, grads=True) as t:
            for _ in range(2):
                model.zero_grad(set_to_none=False)
                model(x).pow(2).mean().backward()
    zeroed = [op for op in t.log.ops if op.func == "zero_"]
    assert len(zeroed) == 2  # the second pass: weight and bias grads of the first backward
    assert all(bool((a == 0).all()) for op in zeroed for a in op.activations)
    assert t.log.validate().checked > 0
    assert torch.count_nonzero(model.weight.grad) > 0
