"""trace(..., intervene={target: fn}): ops and module calls get their output replaced."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest
import torch
from cleanup_checks import (
    assert_globals_unchanged,
    assert_modules_unchanged,
    global_snapshot,
    module_snapshot,
)
from torch import nn

import lens_widget as lw
from lens_widget.widget.payload import build_payload
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


class Chain(nn.Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 4)
        self.act = nn.ReLU(inplace=inplace)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.fc3(h) * 2


class Twice(nn.Module):
    """One layer, two passes."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(5, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(2):
            x = torch.relu(self.fc(x))
        return x


def op_of(log: lw.ModelLog, module: str, func: str) -> lw.OpRecord:
    return next(op for op in log.ops if op.module == module and op.func == func)


def with_hook(module: nn.Module, hook: Callable[..., Any], run: Callable[[], Any]) -> Any:
    handle = module.register_forward_hook(hook)
    try:
        return run()
    finally:
        handle.remove()


def zero(t: torch.Tensor) -> torch.Tensor:
    return t * 0


def test_an_op_intervention_equals_a_forward_hook_ablation():
    model, x = Chain(), torch.randn(3, 6)
    clean = lw.trace(model, x)
    label = op_of(clean, "fc2", "linear").label
    patched = lw.trace(model, x, intervene={label: zero})
    expected = with_hook(model.fc2, lambda m, i, o: o * 0, lambda: model(x))
    assert torch.equal(patched.output, expected)
    assert not torch.equal(clean.output, expected)
    assert [op.label for op in patched.ops if op.intervened] == [label]
    assert torch.equal(patched[label].activation, torch.zeros(3, 8))
    assert patched.labels == clean.labels  # fn's own calls are not recorded
    # the intervened op is not replayed by validate (its value is not what the call made)
    report = patched.validate()
    assert label in report.skipped and report.checked == len(patched.ops) - 1


def test_an_in_place_op_gets_the_value_written_into_its_result():
    model, x = Chain(inplace=True), torch.randn(3, 6)
    clean = lw.trace(model, x)
    relu = next(op for op in clean.ops if op.module == "act")
    assert relu.inplace
    patched = lw.trace(model, x, intervene={relu.layer: lambda t: t + 1})
    expected = with_hook(model.act, lambda m, i, o: o + 1, lambda: model(x))
    assert torch.equal(patched.output, expected)
    assert patched[relu.label].intervened


def test_compare_is_zero_upstream_of_the_intervention_and_nonzero_downstream():
    model, x = Chain(), torch.randn(3, 6)
    clean = lw.trace(model, x)
    label = op_of(clean, "fc2", "linear").label
    patched = lw.trace(model, x, intervene={label: zero})
    cmp = lw.compare(clean, patched)
    downstream = nx.descendants(clean.graph, label) | {label}
    for diff in cmp:
        if diff.label in downstream:
            assert diff.max_abs > 0, diff.label
        else:
            assert diff.max_abs == 0, diff.label
    assert cmp.first_divergence(atol=0, rtol=0).label == label
    assert any(d.label not in downstream for d in cmp)  # there is an upstream to check


def test_a_label_with_a_pass_replaces_that_pass_only():
    model, x = Twice(), torch.randn(2, 5)
    clean = lw.trace(model, x)
    relu = op_of(clean, "", "relu")
    assert relu.label == f"{relu.layer}:1" and relu.n_passes == 2
    patched = lw.trace(model, x, intervene={f"{relu.layer}:2": torch.neg})
    relu_out = [op for op in patched.ops if op.layer == relu.layer]
    assert [op.intervened for op in relu_out] == [False, True]
    assert torch.equal(relu_out[0].activation, clean[f"{relu.layer}:1"].activation)
    assert torch.equal(relu_out[1].activation, -clean[f"{relu.layer}:2"].activation)
    every = lw.trace(model, x, intervene={relu.layer: zero})
    assert all(op.intervened for op in every.ops if op.layer == relu.layer)
    assert torch.equal(every.output, torch.zeros(2, 5))


@pytest.fixture(scope="module")
def gpt2_case():
    return BUILDERS["gpt2"]()


def test_a_module_intervention_on_gpt2_equals_a_forward_hook_ablation(gpt2_case):
    case = gpt2_case
    model = case.model
    target = "transformer.h.1.attn"

    def zero_head_0(t: torch.Tensor) -> torch.Tensor:
        mask = torch.ones_like(t)
        mask[..., : t.shape[-1] // 2] = 0  # the first of two heads' slice of the projection
        return t * mask

    def hook(m: nn.Module, i: Any, o: Any) -> Any:
        return (zero_head_0(o[0]), *o[1:]) if isinstance(o, tuple) else zero_head_0(o)

    clean = lw.trace(model, case.args, case.kwargs)
    before = module_snapshot(model)
    patched = lw.trace(model, case.args, case.kwargs, intervene={target: zero_head_0})
    assert_modules_unchanged(model, before)
    with torch.no_grad():
        expected = with_hook(
            model.get_submodule(target), hook, lambda: model(*case.args, **case.kwargs)
        )
        plain = model(*case.args, **case.kwargs)
    assert torch.equal(patched.output["logits"], expected["logits"])
    assert not torch.equal(plain["logits"], expected["logits"])

    marked = [op for op in patched.ops if op.intervened]
    produced = clean.modules[target].outputs[1][0]
    assert [op.label for op in marked] == [produced]
    assert torch.equal(patched[produced].activation, zero_head_0(clean[produced].activation))

    cmp = lw.compare(clean, patched)
    downstream = nx.descendants(clean.graph, produced) | {produced}
    # (ops inside torch.vmap keep no values to compare: transformers 4.5x's masks)
    valued = [d for d in cmp if d.a.no_values is None]
    assert all(d.max_abs == 0 for d in valued if d.label not in downstream)
    assert cmp["lm_head"].max_abs > 0
    assert cmp.first_divergence(atol=0, rtol=0).label == produced


def test_intervened_ops_are_marked_in_the_saved_log_and_the_widget_payload(tmp_path):
    model, x = Chain(), torch.randn(3, 6)
    label = op_of(lw.trace(model, x), "fc2", "linear").label
    patched = lw.trace(model, x, intervene={"fc2": zero})
    assert patched[label].intervened
    loaded = lw.load(patched.save(tmp_path / "patched"))
    assert [op.intervened for op in loaded.ops] == [op.intervened for op in patched.ops]
    assert torch.equal(loaded[label].activation, torch.zeros(3, 8))
    payload = build_payload(patched)
    flags = {n["id"]: n["intervened"] for n in payload["unrolled"]["nodes"]}
    assert flags[label] and sum(flags.values()) == 1
    rolled = {n["id"]: n["intervened"] for n in payload["rolled"]["nodes"]}
    assert rolled[patched[label].layer] and sum(rolled.values()) == 1


@pytest.mark.parametrize(
    ("intervene", "error", "message"),
    [
        ({"linaer_2_3": zero}, ValueError, ["'linaer_2_3'", "linear_2_3"]),
        ({"fc9": zero}, ValueError, ["'fc9'"]),
        ({"linear_2_3:2": zero}, ValueError, ["'linear_2_3:2'"]),
        ({"linear_2_3": lambda t: t[:, :2]}, ValueError, ["'linear_2_3'", "(3, 2)", "(3, 8)"]),
        ({"linear_2_3": lambda t: t.double()}, ValueError, ["'linear_2_3'", "float64"]),
        ({"linear_2_3": lambda t: t.tolist()}, TypeError, ["'linear_2_3'", "list"]),
        ({"fc2": lambda t: None}, TypeError, ["'fc2'", "module fc2:1", "NoneType"]),
        ({"linear_2_3": 3}, TypeError, ["'linear_2_3'"]),
    ],
)
def test_bad_targets_and_functions_get_a_clear_error_and_leave_the_model_as_it_was(
    intervene: dict[str, Any], error: type[Exception], message: list[str]
):
    model, x = Chain(), torch.randn(3, 6)
    assert op_of(lw.trace(model, x), "fc2", "linear").label == "linear_2_3"
    reference = copy.deepcopy(model)
    snap, world = module_snapshot(model), global_snapshot()
    torch.manual_seed(5)
    rng = torch.get_rng_state()
    with pytest.raises(error) as caught:
        lw.trace(model, x, intervene=intervene)
    text = str(caught.value)
    for part in message:
        assert part in text, (part, text)
    assert_modules_unchanged(model, snap)
    assert_globals_unchanged(world)
    assert torch.equal(torch.get_rng_state(), rng)
    for (name, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
        assert torch.equal(p, q), name
    # the model still runs plainly, as before
    assert torch.equal(model(x), reference(x))


def test_a_wrong_shape_inside_the_pass_keeps_the_partial_log():
    model, x = Chain(), torch.randn(3, 6)
    with pytest.raises(ValueError) as caught:
        lw.trace(model, x, intervene={"linear_2_3": lambda t: t[:1]})
    log = lw.partial_log(caught.value)
    assert log is not None and "linear_2_3" in log.labels


@pytest.mark.parametrize(("returned", "name"), [(None, "NoneType"), (3, "int")])
def test_a_module_returning_no_tensor_says_so(returned, name):
    """A module that ran and returned None is not "a target that matched nothing"."""

    class Returns(nn.Module):
        def forward(self, x: torch.Tensor) -> object:
            return returned

    class Top(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = Returns()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.a(x)
            return x * 2

    with pytest.raises(TypeError, match=f"module a:1 returned {name} with no tensor to replace"):
        lw.trace(Top(), torch.randn(2, 3), intervene={"a": lambda t: t * 0})
