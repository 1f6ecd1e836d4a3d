"""lw.compare(a, b): two traces matched op by op, their differences, the first divergence."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from function_module import FunctionModule
from torch import nn

import lens_widget as lw
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


class Chain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.fc3(h) * 2


@pytest.fixture(scope="module")
def gpt2_case():
    return BUILDERS["gpt2"]()


def test_a_log_compared_with_itself_and_with_a_rerun_is_zero_everywhere(gpt2_case):
    case = gpt2_case
    log = lw.trace(case.model, case.args, case.kwargs)
    rerun = lw.trace(case.model, case.args, case.kwargs)
    for cmp in (lw.compare(log, log), lw.compare(log, rerun)):
        assert len(cmp) == len(log.ops) and not cmp.only_a and not cmp.only_b
        # ops inside torch.vmap (transformers 4.5x builds masks there) keep no values
        valued = [d for d in cmp if d.a.no_values is None]
        assert all(d.comparable for d in valued)
        assert not any(d.comparable for d in cmp if d.a.no_values is not None)
        assert all((d.max_abs, d.rel_l2, d.cosine) == (0.0, 0.0, 1.0) for d in valued)
        assert cmp.first_divergence(atol=0, rtol=0) is None
        assert "have equal values" in repr(cmp)


def test_two_inputs_differ_where_the_input_flows(gpt2_case):
    case = gpt2_case
    other_ids = (case.args[0] + 1) % 96
    a = lw.trace(case.model, case.args, case.kwargs)
    b = lw.trace(case.model, (other_ids,), case.kwargs)
    cmp = lw.compare(a, b)
    assert [d.label for d in cmp] == a.labels
    assert cmp["transformer.wpe"].max_abs == 0  # position embeddings do not see the ids
    assert cmp["transformer.wte"].max_abs > 0
    assert cmp["lm_head"].rel_l2 > 0.01 and cmp["lm_head"].cosine < 1
    first = cmp.first_divergence()
    assert first is not None and first.label == a.ops[0].label  # the view of the ids
    text = repr(cmp)
    assert "max_abs" in text and cmp.top(1)[0].label in text


def test_metrics_equal_a_direct_computation(gpt2_case):
    model = Chain()
    a = lw.trace(model, torch.randn(5, 6))
    b = lw.trace(model, torch.randn(5, 6))
    case = gpt2_case  # views, int ids, several outputs per op
    gpt2_a = lw.trace(case.model, case.args, case.kwargs)
    gpt2_b = lw.trace(case.model, ((case.args[0] * 7) % 96,), case.kwargs)
    for diff in [*lw.compare(a, b), *lw.compare(gpt2_a, gpt2_b)]:
        if diff.a.no_values is not None:  # inside torch.vmap: no values (transformers 4.5x)
            continue
        x, y = diff.a.activation.double(), diff.b.activation.double()
        if len(diff.a.activations) > 1:
            x = torch.cat([t.double().reshape(-1) for t in diff.a.activations])
            y = torch.cat([t.double().reshape(-1) for t in diff.b.activations])
        if not x.numel():
            assert (diff.max_abs, diff.rel_l2, diff.cosine) == (0.0, 0.0, 1.0)
            continue
        assert diff.max_abs == pytest.approx(float((x - y).abs().max()), rel=1e-5)
        if not x.norm():  # the conventions where the formulas divide by zero
            assert (diff.rel_l2, diff.cosine) == (
                (0.0, 1.0) if torch.equal(x, y) else (math.inf, 0.0)
            )
            continue
        assert diff.rel_l2 == pytest.approx(float((x - y).norm() / x.norm()), rel=1e-5)
        cos = F.cosine_similarity(x.reshape(1, -1), y.reshape(1, -1))
        assert diff.cosine == pytest.approx(float(cos), rel=1e-5, abs=1e-7)


def test_first_divergence_is_the_op_after_which_runs_differ():
    model = Chain()
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.fc2.weight[0, 0] += 1e-3
    x = torch.randn(5, 6)
    cmp = lw.compare(lw.trace(model, x), lw.trace(changed, x))
    first = cmp.first_divergence(atol=1e-5)
    assert first is not None and first.label == "linear_2_3" and first.a.module == "fc2"
    upstream = [d for d in cmp if d.a.index < first.a.index]
    assert upstream and all(d.max_abs == 0 for d in upstream)

    with torch.no_grad():  # back, then a change below the tolerance
        changed.fc2.weight.copy_(model.fc2.weight)
        changed.fc2.bias[0] += 1e-6
    tiny = lw.compare(lw.trace(model, x), lw.trace(changed, x))
    assert tiny.first_divergence(atol=1e-5) is None
    assert tiny.first_divergence(atol=0, rtol=0).label == "linear_2_3"


def test_first_divergence_uses_rtol_elementwise():
    def forward(x):
        return x * 1.0

    a = lw.trace(FunctionModule(forward), torch.tensor([1000.0, 1.0]))
    b = lw.trace(FunctionModule(forward), torch.tensor([1000.01, 1.0]))
    cmp = lw.compare(a, b)
    assert cmp.first_divergence(atol=1e-3, rtol=0).label == "mul_1_1"
    assert cmp.first_divergence(atol=1e-3, rtol=1e-4) is None  # 0.01 <= 1e-3 + 0.1


def test_other_dtypes_and_unsaved_ops():
    model = Chain()
    x = torch.randn(5, 6)
    a = lw.trace(model, x)
    double = lw.trace(copy.deepcopy(model).double(), x.double())
    cmp = lw.compare(a, double)
    assert all(d.dtype_mismatch and d.comparable for d in cmp)
    assert max(d.max_abs for d in cmp) < 1e-5
    assert cmp.first_divergence(atol=1e-5) is None

    half = lw.compare(a, lw.trace(copy.deepcopy(model).bfloat16(), x.bfloat16()))
    assert 0 < max(d.max_abs for d in half) < 0.1
    assert half.first_divergence(atol=1e-5) is not None

    partial = lw.compare(a, lw.trace(model, x, save=["fc3"]))
    assert partial["fc3"].comparable and partial["fc3"].max_abs == 0
    assert not partial["fc1"].comparable and partial["fc1"].reason == "not saved in B"
    assert partial.first_divergence(atol=0, rtol=0) is None


def test_nan_on_both_sides_counts_as_equal():
    def forward(x):
        return torch.log(x) + 1

    x = torch.tensor([-1.0, 2.0, 0.0])
    cmp = lw.compare(lw.trace(FunctionModule(forward), x), lw.trace(FunctionModule(forward), x))
    assert all(d.max_abs == 0 and d.cosine == 1.0 for d in cmp)
    other = lw.compare(
        lw.trace(FunctionModule(forward), x),
        lw.trace(FunctionModule(forward), torch.tensor([3.0, 2.0, 0.0])),
    )
    assert math.isnan(other["log_1_1"].max_abs)
    assert other.first_divergence().label == "log_1_1"


class Loop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, n: int, extra: bool = False) -> torch.Tensor:
        for _ in range(n):
            x = self.fc(x)
        if extra:
            x = torch.sigmoid(x)
        return x


def test_ops_are_matched_by_layer_and_pass_and_one_sided_ops_are_listed():
    x, model = torch.randn(2, 4), Loop()
    once = lw.trace(model, (x, 1, True))
    thrice = lw.trace(model, (x, 3))
    cmp = lw.compare(once, thrice)
    assert once.labels[0] == "linear_1_1" and thrice.labels[0] == "linear_1_1:1"
    assert cmp["linear_1_1"].b.label == "linear_1_1:1" and cmp["linear_1_1"].max_abs == 0
    assert cmp["linear_1_1:1"] is cmp["linear_1_1"]
    assert cmp[0] is cmp["linear_1_1"]
    assert cmp.only_a == ["sigmoid_1_2"]
    assert cmp.only_b == ["linear_1_1:2", "linear_1_1:3"]
    with pytest.raises(KeyError, match="'linear_1_1:3' ran only in B"):
        cmp["linear_1_1:3"]
    with pytest.raises(KeyError, match="'sigmoid_1_2' ran only in A"):
        cmp["sigmoid_1_2"]
    with pytest.raises(KeyError, match="'conv2d_9_9'"):
        cmp["conv2d_9_9"]
    assert "conv2d_9_9" not in cmp and "linear_1_1" in cmp


def test_shape_mismatches_are_flagged_and_diverge():
    model = Chain()
    cmp = lw.compare(lw.trace(model, torch.randn(5, 6)), lw.trace(model, torch.randn(3, 6)))
    assert all(d.shape_mismatch and not d.comparable for d in cmp)
    assert "shapes differ" in cmp["fc1"].reason
    assert cmp.first_divergence().label == "linear_1_1"
    assert "shapes differ" in repr(cmp)


def test_compare_takes_logs():
    with pytest.raises(TypeError, match="two ModelLogs"):
        lw.compare(torch.zeros(1), torch.zeros(1))  # type: ignore[arg-type]


def test_first_divergence_when_nothing_could_be_compared_says_why():
    """Weights differ, but A kept no values: "no divergence" would be a wrong answer."""
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 2))
    b = copy.deepcopy(a)
    with torch.no_grad():
        b[2].weight.add_(1.0)
    x = torch.randn(4, 6)
    with pytest.raises(ValueError, match="no op could be compared .not saved in A"):
        lw.compare(lw.trace(a, (x,), save=None), lw.trace(b, (x,))).first_divergence()
    # one op saved on both sides is enough to answer (for what was compared)
    subset = lw.compare(lw.trace(a, (x,), save=["linear_2_3"]), lw.trace(b, (x,)))
    assert subset.first_divergence().label == "linear_2_3"
