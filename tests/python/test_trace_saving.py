"""Which activations are saved, and that each equals what its op produced at that moment."""

from __future__ import annotations

import warnings

import pytest
import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw


class InplaceAfterSave(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2  # saved by reference ...
        view = y.view(-1)
        y.add_(100)  # ... then overwritten in place, also through the view
        y[0] = -1  # setitem overwrites again
        return view + 0  # consumes the view after both writes


def test_saved_activation_is_the_value_at_that_moment():
    x = torch.arange(4.0).reshape(2, 2)
    log = lw.trace(InplaceAfterSave(), x)
    assert torch.equal(log["mul_1_1"].activation, x * 2)
    assert torch.equal(log["view_1_2"].activation, (x * 2).view(-1))
    assert torch.equal(log["add_1_3"].activation, x * 2 + 100)
    expected = x * 2 + 100
    expected[0] = -1
    assert torch.equal(log["setitem_1_4"].activation, expected)
    assert torch.equal(log["add_2_5"].activation, expected.view(-1))
    log.validate()


def test_only_tensors_about_to_be_written_are_copied():
    class NoWrites(nn.Module):
        def forward(self, x):
            y = x.exp()
            return y.view(-1), y.t()

    x = torch.randn(3, 3)
    log = lw.trace(NoWrites(), x)
    exp, view = log["exp_1_1"].activation, log["view_1_2"].activation
    assert exp.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()
    assert log["view_1_2"].activation is log.output[0]  # a reference, not a copy
    assert log.saved_bytes == x.numel() * 4  # one storage, counted once

    written = lw.trace(InplaceAfterSave(), torch.ones(2, 2))
    copied = {
        n.label
        for n in written.ops
        if n.activation.untyped_storage().data_ptr()
        != written["setitem_1_4"].activation.untyped_storage().data_ptr()
    }
    assert copied == {"mul_1_1", "view_1_2", "add_1_3", "add_2_5"}  # add_2_5 is a new tensor


def test_save_none_keeps_the_graph_but_no_tensors():
    log = lw.trace(InplaceAfterSave(), torch.ones(2, 2), save=None)
    assert all(n.activations is None for n in log.nodes)
    assert len(log.ops) == 5 and log.graph.number_of_edges() > 0
    assert log.saved_bytes == 0
    report = log.validate()
    assert report.checked == 0 and len(report.skipped) == 5


class TwoBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        self.b = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x)).tanh()


@pytest.mark.parametrize(
    ("save", "expected"),
    [
        (["tanh_1_4"], {"tanh_1_4"}),  # a label
        (["a"], {"linear_1_1", "relu_1_2"}),  # a module address: every op inside
        (["linear"], {"linear_1_1", "linear_2_3"}),  # a function name
        (lambda op: op.module == "b", {"linear_2_3"}),  # a predicate
    ],
)
def test_save_selects_by_label_module_function_or_predicate(save, expected):
    log = lw.trace(TwoBlocks(), torch.randn(1, 2), save=save)
    assert {op.label for op in log.ops if op.saved} == expected


def test_validate_with_partial_saving_skips_ops_whose_inputs_were_dropped():
    log = lw.trace(TwoBlocks(), torch.randn(1, 2), save=["a"])
    report = log.validate()
    assert report.checked == 2  # linear_1_1 (input + params saved), relu_1_2
    assert set(report.skipped) == {"linear_2_3", "tanh_1_4"}


def test_bad_save_values_are_explained():
    with pytest.raises(ValueError, match="save="):
        lw.trace(TwoBlocks(), torch.randn(1, 2), save="everything")
    with pytest.raises(TypeError, match="save must be"):
        lw.trace(TwoBlocks(), torch.randn(1, 2), save=3)  # type: ignore[arg-type]


def test_validate_names_the_first_op_that_diverges():
    log = lw.trace(TwoBlocks(), torch.randn(1, 2))
    log["relu_1_2"].activations = (log["relu_1_2"].activation + 1,)
    with pytest.raises(lw.ValidationError, match="relu_1_2") as caught:
        log.validate()
    assert caught.value.label == "relu_1_2"


def test_validate_replays_random_ops_and_leaves_the_rng_alone():
    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x) + torch.randn(x.shape)

    torch.manual_seed(0)
    log = lw.trace(Noisy().train(), torch.ones(64))
    state = torch.get_rng_state()
    assert log.validate().checked == 3
    assert torch.equal(torch.get_rng_state(), state)


def test_deleting_the_log_frees_its_tensors_without_waiting_for_gc():
    import gc
    import weakref

    was_enabled = gc.isenabled()
    gc.disable()  # only reference counting: a cycle through the log would keep tensors alive
    try:
        log = lw.trace(TwoBlocks(), torch.randn(1, 2))
        saved = weakref.ref(log["relu_1_2"].activation)
        del log
        assert saved() is None
    finally:
        if was_enabled:
            gc.enable()


def test_uninitialized_memory_is_compared_by_shape_only():
    def fill(x):
        out = torch.empty_like(x)
        torch.add(x, 1, out=out)
        values, indices = torch.empty(4), torch.empty(4, dtype=torch.long)
        torch.max(x, 1, out=(values, indices))
        return out * 2 + values.unsqueeze(1)

    log = lw.trace(FunctionModule(fill), torch.randn(4, 4))
    assert log.validate().checked == len(log.ops)


def test_explicit_generator_is_skipped_by_validate_and_left_alone():
    class Noisy(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.g = torch.Generator().manual_seed(3)

        def forward(self, x):
            return x + torch.randn(x.shape, generator=self.g)

    model = Noisy()
    log = lw.trace(model, torch.zeros(3))
    state = model.g.get_state().clone()
    report = log.validate()
    assert report.skipped == {"randn_1_1": "draws from an explicit torch.Generator"}
    assert torch.equal(model.g.get_state(), state)


def test_predicate_sees_the_source_and_the_layer():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    seen: list[tuple[str, str]] = []

    def keep(op):
        seen.append((op.layer, op.source))
        return op.layer == "linear_1_1"

    log = lw.trace(model, torch.randn(2, 4), save=keep)
    assert [op.label for op in log.ops if op.saved] == ["linear_1_1"]
    assert all(
        isinstance(source, str) and source.endswith(".py:" + source.rsplit(":", 1)[1])
        for _, source in seen
    )


def test_predicate_sees_each_record_as_complete_as_the_log_has_it():
    """Links, source lines and output metadata are filled after the pass for speed, but a
    predicate reads records as their ops run: it sees them filled already."""
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    fields = ("layer", "parents", "parent_args", "from_input", "source", "source_code")
    fields += ("shape", "shapes", "dtype", "device", "nbytes")
    seen = []

    def keep(op):
        seen.append(
            tuple(list(v) if isinstance(v, list) else v for v in map(op.__getattribute__, fields))
        )
        return True

    log = lw.trace(model, torch.randn(2, 4), save=keep)
    assert seen == [tuple(getattr(op, f) for f in fields) for op in log.ops]
    assert seen[0][1] == ["input.0", "0.weight", "0.bias"] and seen[2][6] == (2, 2)


def test_unmatched_save_names_warn():
    with pytest.warns(UserWarning, match=r"\['lineer'\]"):
        lw.trace(nn.Linear(2, 2), torch.randn(1, 2), save=["lineer"])


def test_saved_values_carry_no_autograd_history():
    model = nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    log = lw.trace(model, x)
    assert all(not t.requires_grad for n in log.nodes for t in n.activations or ())
    log.output.sum().backward()  # the user's output still has its graph
    assert x.grad is not None and model.weight.grad is not None


@pytest.mark.parametrize("implementation", ["for-loop", "foreach", "fused"])
def test_an_optimizer_step_keeps_the_values_from_before_it(implementation):
    """Optimizers write whole lists of tensors in one call (torch._foreach_add_(params,
    ...); torch._fused_adamw_ also writes its moments and the gradients), and so does
    clip_grad_norm_: each saved value is copied before such a call overwrites it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    options = {
        "for-loop": {"foreach": False},
        "foreach": {"foreach": True},
        "fused": {"fused": True},
    }
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, **options[implementation])
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    weight = model[0].weight.detach().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "overwritten in place by a call the tracer could not see"
        with lw.tracing(model, grads=True) as t:
            nn.functional.mse_loss(model(x), y).backward()
            grad = model[0].weight.grad.clone()
            nn.utils.clip_grad_norm_(model.parameters(), 0.01)
            optimizer.step()
            optimizer.zero_grad()
    log = t.log
    assert not torch.equal(model[0].weight, weight)  # the step ran
    assert torch.equal(log["0.weight"].activation, weight)
    first_read = next(op for op in log.ops if op.func == "grad")
    assert torch.equal(first_read.activation, grad)  # before clipping scaled it in place
    report = log.validate()  # the forward replays from the weights it ran with
    assert report.checked > 0 and {op.func for op in log.ops if op.label in report.skipped} == {
        "grad"
    }


@pytest.mark.parametrize("foreach", [False, True])
def test_an_optimizer_stepped_inside_backward_keeps_the_values_from_before_it(foreach):
    """ "Optimizer in backward": each parameter's step runs in its post-accumulate-grad
    hook, inside the engine, where no op is recorded. The saved weights were the stepped
    ones (validate failed on the first linear); its writes are now seen and copied first."""
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)), torch.randn(5, 4)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizers = {p: torch.optim.SGD([p], lr=0.1, foreach=foreach) for p in model.parameters()}

    def step(p: torch.Tensor) -> None:
        optimizers[p].step()
        optimizers[p].zero_grad()

    hooks = [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    with lw.tracing(model, grads=True) as t:
        model(x).pow(2).mean().backward()
    for hook in hooks:
        hook.remove()
    log = t.log
    assert not torch.equal(model[0].weight, before["0.weight"])  # the steps ran
    for name, value in before.items():
        assert torch.equal(log[name].activation, value), name
    assert all(p.grad is None for p in model.parameters())  # as the hooks left them
    assert log.leaves["0.weight"].grad is not None  # the gradient each step used
    assert log.validate().checked == len(log.ops)


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW", "SGD"])
def test_a_fused_step_is_an_op_that_the_next_forward_reads(optimizer, tmp_path):
    """torch._fused_adam_ & co. write the parameters and return None: they are recorded
    with what they wrote as outputs, so the second forward reads the stepped weights from
    that op (not the stale parameter source), validates, and does so again after loading."""
    torch.manual_seed(0)
    model, x = nn.Linear(6, 2), torch.randn(4, 6)
    opt = getattr(torch.optim, optimizer)(model.parameters(), lr=0.1, fused=True)
    with lw.tracing(model, grads=True) as t:
        for _ in range(2):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
    log = t.log
    (step, _) = [op for op in log.ops if op.func.startswith("_fused_")]
    assert step.shapes[:2] == ((2, 6), (2,))  # the weight and bias it wrote, first
    assert log["linear_1_1:2"].parents == ["input.0", step.label]
    report = log.validate()
    assert step.label not in report.skipped and report.checked >= 4
    log.save(tmp_path / "steps")
    loaded = lw.load(tmp_path / "steps")
    assert loaded[step.label].replay[0].written_slots == step.replay[0].written_slots
    assert step.label not in loaded.validate().skipped


def test_save_takes_a_module_call_as_intervene_does():
    """save=["b:2"]: the ops inside the 2nd call of module b only, no "matched nothing"
    warning; a pass that never ran still warns."""

    class Loop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(3):
                x = self.b(x)
            return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log = lw.trace(Loop(), torch.randn(2, 4), save=["b:2"])
    assert [op.label for op in log.ops if op.saved] == ["linear_1_1:2", "relu_1_2:2"]
    with pytest.warns(UserWarning, match=r"save names \['b:4'\] match no"):
        lw.trace(Loop(), torch.randn(2, 4), save=["b:4"])


class LinearThenRaises(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        super().forward(x)
        raise ValueError("after the linear")


@pytest.mark.parametrize("raises", [False, True])
def test_a_parameters_value_is_a_detached_reference_to_it(raises):
    """A parameter's saved value is detached when the records are filled (on the first
    read of a plain trace, at once for a partial log): a plain tensor on the parameter's
    memory, whichever way the log was built; the model's own parameter is untouched."""
    model = LinearThenRaises(3, 2) if raises else nn.Linear(3, 2)
    if raises:
        with pytest.raises(ValueError) as caught:
            lw.trace(model, torch.randn(1, 3), save="all")
        log = lw.partial_log(caught.value)
    else:
        log = lw.trace(model, torch.randn(1, 3), save="all")
    for name in ("weight", "bias"):
        value = log[name].activation
        assert type(value) is torch.Tensor and not value.requires_grad
        assert value.data_ptr() == getattr(model, name).data_ptr()  # a reference, not a copy
        assert torch.equal(value, getattr(model, name).detach())
    assert type(model.weight) is nn.Parameter and model.weight.requires_grad
