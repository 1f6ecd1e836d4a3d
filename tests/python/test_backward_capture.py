"""`trace(..., backward=fn)` on hand-written steps: several passes, retain_graph,
autograd.grad, leaf names, the save selection, and the world left as an untraced step."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from cleanup_checks import captures_alive
from torch import nn

import lens_widget as lw
from lens_widget.widget.gradient_payload import gradient_info


class TwoLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def setup() -> tuple[TwoLayer, torch.Tensor]:
    torch.manual_seed(0)
    return TwoLayer(), torch.randn(3, 4, requires_grad=True)


def grads_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_two_backwards_keep_one_gradient_per_pass_and_sum_as_grad_accumulates() -> None:
    model, x = setup()

    def two_losses(out: torch.Tensor) -> None:
        out.sum().backward(retain_graph=True)
        out.pow(2).sum().backward()

    out = model(x)
    out.sum().backward(retain_graph=True)
    first_fc1 = model.fc1.weight.grad.clone()
    out.pow(2).sum().backward()
    plain, plain_x = grads_of(model), x.grad.clone()
    model.zero_grad(set_to_none=True)
    x.grad = None

    log = lw.trace(model, (x,), backward=two_losses)
    assert [(p.index, p.call, p.retain_graph) for p in log.backward_passes] == [
        (1, "backward", True),
        (2, "backward", False),
    ]
    leaf = log.leaves["fc1.weight"]
    assert len(leaf.grads) == 2 and torch.equal(leaf.grads[0], first_fc1)
    for name, grad in plain.items():
        assert torch.equal(log.leaves[name].grad, grad), name
        assert torch.equal(model.get_parameter(name).grad, grad), name
    assert torch.equal(x.grad, plain_x) and torch.equal(log.leaves["input.0"].grad, plain_x)
    fc2 = log["fc2"]
    assert len(fc2.grads) == 2 and torch.equal(fc2.grads[0], torch.ones(3, 2))
    assert torch.equal(fc2.grad, fc2.grads[0] + fc2.grads[1])
    # the first loss's ops get no gradient from the second pass
    first_sum = next(op for op in log.ops if op.func == "sum")
    assert first_sum.grads[0] is not None and first_sum.grads[1] is None
    # nodes run in both passes are one node of the backward graph, with both passes
    graph = log.backward_graph
    shared = graph.nodes[log.backward_passes[1].nodes[-1]]
    assert shared["passes"] == [1, 2] or shared["backward_pass"] == 2
    assert all(graph.nodes[n]["backward_pass"] in (1, 2) for n in graph)


def test_autograd_grad_is_a_pass_whose_gradients_are_logged_and_grad_is_untouched() -> None:
    model, x = setup()
    expected = torch.autograd.grad(model(x).sum(), [x, model.fc1.weight])
    kept: list[Any] = []

    def grad_call(out: torch.Tensor) -> None:
        kept.extend(torch.autograd.grad(out.sum(), [x, model.fc1.weight]))

    log = lw.trace(model, (x,), backward=grad_call)
    (only,) = log.backward_passes
    assert only.call == "autograd.grad" and not only.retain_graph
    assert torch.equal(log.leaves["input.0"].grad, expected[0])
    assert torch.equal(log.leaves["fc1.weight"].grad, expected[1])
    assert torch.equal(kept[0], expected[0])
    assert all(p.grad is None for p in model.parameters()) and x.grad is None
    assert log["fc1"].grad is not None and log["fc1"].grad.shape == (3, 6)
    assert not log.leaves["fc2.weight"].received  # autograd.grad asked only for fc1.weight


def test_returned_loss_is_recorded_at_the_top_level_with_its_source() -> None:
    model, x = setup()
    log = lw.trace(model, (x,), backward=lambda out: out.float().pow(2).mean())
    loss_ops = [op for op in log.ops if op.func in ("pow", "mean")]
    assert [op.module for op in loss_ops] == ["", ""]
    assert all(op.source.startswith(__file__) for op in loss_ops)
    assert log.backward_passes[0].source.startswith(__file__)
    assert torch.equal(loss_ops[-1].grad, torch.tensor(1.0))


def test_leaves_are_named_by_address_input_and_the_line_that_made_them() -> None:
    model, x = setup()
    outside = torch.randn(2, requires_grad=True)  # made before the trace: named by first use

    def with_leaves(out: torch.Tensor) -> torch.Tensor:
        scale = torch.ones(2, requires_grad=True)  # made inside: named by this line
        return (out * scale * outside).sum()

    log = lw.trace(model, (x,), backward=with_leaves)
    kinds = {name: leaf.kind for name, leaf in log.leaves.items()}
    params = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, k in kinds.items() if k == "param"] == params
    assert [n for n, k in kinds.items() if k == "input"] == ["input.0"]
    other = {n for n, k in kinds.items() if k == "other"}
    inside_name = f"test_backward_capture.py:{_line('made inside')}"
    assert inside_name in other and len(other) == 2
    made_inside = log.leaves[inside_name]
    assert made_inside.source.startswith(__file__) and made_inside.received
    (used_first,) = other - {inside_name}
    assert log[used_first].func in ("mul", "__mul__")  # the op that first used it
    assert torch.equal(log.leaves[used_first].grad, outside_grad(model, x, outside))


def outside_grad(model: TwoLayer, x: torch.Tensor, outside: torch.Tensor) -> torch.Tensor:
    leaf = outside.detach().requires_grad_()
    (model(x) * torch.ones(2) * leaf).sum().backward()
    return leaf.grad


def _line(marker: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if marker in line and "=" in line)


def test_save_selection_applies_to_op_gradients_but_leaves_are_always_kept() -> None:
    model, x = setup()
    log = lw.trace(model, (x,), save=["fc2"], backward=lambda out: out.sum())
    kept = [op.label for op in log.ops if op.grads is not None]
    assert kept == [log["fc2"].label]
    assert log["fc1"].grads is None and log["fc1"].grad is None
    assert all(leaf.received for leaf in log.leaves.values())
    nothing = lw.trace(model, (x,), save=None, backward=lambda out: out.sum())
    assert all(op.grads is None for op in nothing.ops)
    assert nothing.leaves["fc1.weight"].received
    assert any(
        d["forward_op"] == nothing["fc1"].label for _, d in nothing.backward_graph.nodes(data=True)
    )


def test_a_forward_only_trace_has_no_gradients() -> None:
    model, x = setup()
    log = lw.trace(model, (x,))
    assert log.leaves == {} and log.backward_passes == [] and len(log.backward_graph) == 0
    assert all(op.grads is None for op in log.ops)


def test_timed_trace_with_backward() -> None:
    model, x = setup()
    log = lw.trace(model, (x,), timing=True, backward=lambda out: out.sum())
    assert log["fc1"].time_ms is not None and log["fc1"].grad is not None


def test_world_ends_as_after_an_untraced_step() -> None:
    model, x = setup()
    torch.manual_seed(3)
    out = model(x)
    out.sum().backward(retain_graph=True)
    plain = grads_of(model)
    rng = torch.get_rng_state()
    model.zero_grad(set_to_none=True)
    kept: dict[str, torch.Tensor] = {}
    captures_before = captures_alive()

    def keep_graph(out: torch.Tensor) -> None:
        kept["loss"] = out.sum()
        kept["loss"].backward(retain_graph=True)

    torch.manual_seed(3)
    log = lw.trace(model, (x,), backward=keep_graph)
    assert torch.equal(torch.get_rng_state(), rng)
    for name, grad in plain.items():
        assert torch.equal(model.get_parameter(name).grad, grad)
    for p in model.parameters():
        assert not p._backward_hooks
    assert x._backward_hooks is None or not x._backward_hooks
    del log
    # No hook is left on any autograd node: a node hook would hold the capture alive, and
    # the graph is still alive here (kept["loss"]).
    assert captures_alive() == captures_before
    # The graph still works as the user's: a plain backward through it adds the same again.
    model.zero_grad(set_to_none=True)
    kept["loss"].backward()
    for name, grad in plain.items():
        assert torch.equal(model.get_parameter(name).grad, grad)


def test_backward_fn_returning_something_else_is_a_clear_error() -> None:
    model, x = setup()
    try:
        lw.trace(model, (x,), backward=lambda out: 3.0)
    except TypeError as err:
        assert "backward=fn returned float" in str(err)
    else:
        raise AssertionError("no error")


def test_a_backward_that_is_no_function_is_refused_before_the_forward_runs() -> None:
    model, x = setup()
    ran: list[int] = []
    model.register_forward_hook(lambda *_: ran.append(1))
    with pytest.raises(TypeError, match="backward must be a function of the output"):
        lw.trace(model, (x,), backward=model(x).sum())  # the loss, not a function of the output
    assert ran == [1]  # only the call above: the traced forward never started


def jacobian_then_loss(x: torch.Tensor) -> Any:
    """A backward fn: the Jacobian of the output by x (autograd.grad with is_grads_batched,
    the engine under vmap), then a plain backward of a loss."""

    def step(out: torch.Tensor) -> torch.Tensor:
        basis = torch.eye(out.numel()).view(-1, *out.shape)
        (jac,) = torch.autograd.grad(out, x, basis, retain_graph=True, is_grads_batched=True)
        kept.append(jac)
        return out.pow(2).sum()

    kept: list[torch.Tensor] = []
    step.kept = kept  # type: ignore[attr-defined]
    return step


def test_a_batched_autograd_grad_is_a_pass_that_keeps_no_gradient(tmp_path: Any) -> None:
    model, x = setup()
    plain_step = jacobian_then_loss(x)
    plain_step(model(x)).backward()
    plain_grads, plain_jac = grads_of(model), plain_step.kept[0]
    model.zero_grad(set_to_none=True)
    x.grad = None

    step = jacobian_then_loss(x)
    log = lw.trace(model, (x,), backward=step)
    assert torch.equal(step.kept[0], plain_jac) and plain_jac.shape == (6, 3, 4)
    traced_grads = grads_of(model)
    assert traced_grads.keys() == plain_grads.keys()
    assert all(torch.equal(traced_grads[n], g) for n, g in plain_grads.items())
    batched, loss = log.backward_passes
    assert (batched.call, batched.in_transform, loss.in_transform) == ("autograd.grad", True, False)
    # vmap's batched gradients escape nowhere: the batched pass keeps none, the next keeps all
    fc1 = log["fc1"]
    assert fc1.grads[0] is None and fc1.grads[1] is not None and fc1.grad.shape == (3, 6)
    assert log.leaves["fc1.weight"].grads[0] is None
    assert torch.equal(log.leaves["fc1.weight"].grad, plain_grads["fc1.weight"])
    ran = [log.backward_graph.nodes[n] for n in batched.nodes]
    assert any(n["forward_op"] == fc1.label for n in ran)
    assert all(s is None or len(s) == 2 for n in ran for s in n["grad_shapes"])  # per sample

    # what only the batched pass reached is not shown as "no gradient reached"
    def jacobian_only(out: torch.Tensor) -> None:
        jacobian_then_loss(x)(out)  # its loss is never backpropagated

    only_jacobian = lw.trace(model, (x,), backward=jacobian_only)
    info = gradient_info(only_jacobian)
    assert info is not None and fc1.label not in info["noGrad"]
    assert info["passes"][0]["inTransform"] is True
    # the log saves, loads and writes its page
    log.save(tmp_path / "step")
    loaded = lw.load(tmp_path / "step")
    assert [p.in_transform for p in loaded.backward_passes] == [True, False]
    assert torch.equal(loaded["fc1"].grad, fc1.grad)
    assert log.to_html(tmp_path / "step.html").stat().st_size > 0


def test_saved_log_keeps_op_gradients(tmp_path: Any) -> None:
    model, x = setup()
    log = lw.trace(model, (x,), backward=lambda out: out.sum())
    log.save(tmp_path / "step")
    loaded = lw.load(tmp_path / "step")
    for before, after in zip(log.nodes, loaded.nodes, strict=True):
        assert (before.grads is None) == (after.grads is None), before.label
        if before.grad is not None:
            assert torch.equal(before.grad, after.grad), before.label
    assert loaded["fc1"].grad is not None and loaded["fc1.weight"].grad is not None


class Cube(torch.autograd.Function):
    """A custom autograd.Function: its forward runs with grad off."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class WithCube(nn.Module):
    def __init__(self, careful: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.careful = careful

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return read_three_times(Cube.apply(self.fc(x)), self.careful)


def read_three_times(cubed: torch.Tensor, careful: bool) -> torch.Tensor:
    """First read through the recorder's fast path (a mul) or its careful path (a list)."""
    return torch.cat([cubed, cubed, cubed]).sum() if careful else (cubed * 3).sum()


@pytest.mark.parametrize("careful", [False, True])
def test_a_custom_autograd_function_names_its_forward_op_and_keeps_its_gradient(
    careful: bool,
) -> None:
    torch.manual_seed(0)
    model, x = WithCube(careful), torch.randn(3, 4)
    seen: list[torch.Tensor] = []
    cubed = Cube.apply(model.fc(x))
    cubed.register_hook(seen.append)
    read_three_times(cubed, careful).backward()
    model.zero_grad(set_to_none=True)

    log = lw.trace(model, (x,), backward=lambda out: out)
    # linear, then x * x * x inside Cube.forward: its second mul made the output
    cube_op = log.ops[2]
    assert [op.func for op in log.ops[:3]] == ["linear", "mul", "mul"]
    nodes = dict(log.backward_graph.nodes(data=True))
    assert nodes["CubeBackward_1"]["forward_op"] == cube_op.label
    assert cube_op.grad is not None
    assert torch.equal(cube_op.grad, seen[0])
    assert torch.equal(cube_op.grad, torch.full((3, 4), 3.0))


class Doubled(torch.autograd.Function):
    """Writes its input in place (mark_dirty): the write inside forward made the output."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return 2 * grad


class SumAndScale(torch.autograd.Function):
    """Two outputs, and an op after them in its forward (the node comes after all three)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        shifted, scaled = x + 1, x * 2
        shifted.sum()  # recorded after the outputs, still before the Function's node exists
        return shifted, scaled

    @staticmethod
    def backward(ctx: Any, g_shifted: torch.Tensor, g_scaled: torch.Tensor) -> torch.Tensor:
        return g_shifted + 2 * g_scaled


def test_a_function_writing_its_input_is_named_after_the_write() -> None:
    torch.manual_seed(0)
    fc, x = nn.Linear(4, 4), torch.randn(3, 4)
    with lw.tracing(fc, grads=True) as section:
        (Doubled.apply(fc(x).clone()) * 3).sum().backward()
    log = section.log
    write = next(op for op in log.ops if op.func == "mul_")
    nodes = dict(log.backward_graph.nodes(data=True))
    assert nodes["DoubledBackward_1"]["forward_op"] == write.label
    assert write.grad is not None


def test_a_function_with_an_op_after_its_outputs_is_named_after_its_first_output() -> None:
    torch.manual_seed(0)
    fc, x = nn.Linear(4, 4), torch.randn(3, 4)
    with lw.tracing(fc, grads=True) as section:
        shifted, scaled = SumAndScale.apply(fc(x))
        (shifted * 5 + scaled * 7).sum().backward()
    log = section.log
    add = next(op for op in log.ops if op.func == "add")
    nodes = dict(log.backward_graph.nodes(data=True))
    assert nodes["SumAndScaleBackward_1"]["forward_op"] == add.label
    assert torch.equal(add.grad, torch.full((3, 4), 5.0))


def test_a_long_stretch_without_grad_keeps_no_growing_watch() -> None:
    """Outputs made with grad off are watched (a Function's node may come after them): the
    ones already freed are let go, so a no_grad loop in a section stays bounded."""
    fc = nn.Linear(4, 4)
    with lw.tracing(fc, grads=True, save=None) as section:
        with torch.no_grad():
            x = torch.zeros(2, 4)
            for _ in range(5_000):
                x = x + 1
        capture = section._session.recorder.backward_capture
        watched = len(capture._watched)
        fc(x).sum().backward()
    assert watched < 4_096
    assert len(section.log.ops) > 5_000


def test_the_nodes_of_an_ops_internals_are_within_it() -> None:
    """F.linear on a 3-d input runs view(addmm(bias, view(x), t(weight))): the output's
    node is linear's own; addmm and t are inside linear; the leaves' nodes are no op's."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU())
    log = lw.trace(model, (torch.randn(2, 3, 4),), backward=lambda out: out.sum())
    nodes = dict(log.backward_graph.nodes(data=True))
    made = {data["grad_fn"]: (data["forward_op"], data["within_op"]) for data in nodes.values()}
    assert made["ViewBackward0"] == ("linear_1_1", None)
    assert made["AddmmBackward0"] == (None, "linear_1_1")
    assert made["TBackward0"] == (None, "linear_1_1")
    assert made["ReluBackward0"] == ("relu_1_2", None)
    assert made["AccumulateGrad"] == (None, None)


def test_module_full_backward_hooks_add_no_leaves_and_their_views_keep_gradients() -> None:
    """register_full_backward_hook passes a module's inputs and outputs through an
    autograd.Function that returns them as views (view_as): made requiring grad without a
    grad_fn, then given one. They are not leaves, and their ops get their gradient."""
    model, x = setup()
    seen: list[torch.Tensor] = []
    model.fc2.register_full_backward_hook(lambda _m, _gi, go: seen.append(go[0]))
    log = lw.trace(model, (x,), backward=lambda out: out.pow(2).sum())
    assert list(log.leaves) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "input.0"]
    assert all(leaf.received for leaf in log.leaves.values())
    views = [op for op in log.ops if op.func == "view_as"]
    assert len(views) == 2  # fc2's input and its output
    assert all(op.grad is not None for op in log.ops)
    out = log.output.detach()
    assert torch.equal(views[1].grad, 2 * out)
    assert torch.equal(views[1].grad, seen[0])


class HookedMid(nn.Module):
    """A tensor hook (gradient clipping, a user's scaling) changes the gradient of an op's
    output before the op's backward node runs on it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mid = self.fc1(x)
        if mid.requires_grad:
            mid.register_hook(lambda g: g * 10)
        return self.fc2(mid.relu())


def test_an_ops_gradient_is_the_one_its_node_ran_on_after_tensor_hooks() -> None:
    torch.manual_seed(0)
    model, x = HookedMid(), torch.randn(3, 4)
    mid = model.fc1(x)
    (incoming,) = torch.autograd.grad(model.fc2(mid.relu()).sum(), mid)  # before any hook
    scaled: list[torch.Tensor] = []
    mid.register_hook(lambda g: g * 10)
    mid.register_hook(lambda g: scaled.append(g) or None)  # after the scaling: what fc1 gets
    model.fc2(mid.relu()).sum().backward()
    expected_weight_grad = model.fc1.weight.grad.clone()
    model.zero_grad(set_to_none=True)

    log = lw.trace(model, (x,), backward=lambda out: out.sum())
    fc1 = log["fc1"]
    assert torch.equal(fc1.grad, scaled[0]) and torch.equal(fc1.grad, incoming * 10)
    assert torch.equal(log.leaves["fc1.weight"].grad, expected_weight_grad)
