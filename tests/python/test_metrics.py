"""Per-op metrics: FLOPs from torch's formulas, activation statistics, module totals, and the
op that produced the first NaN/Inf."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from flop_kinds import matrix_flops
from function_module import FunctionModule
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import lens_widget as lw
from lens_widget.log.flop_formulas import flop_counter_mode, op_counter_mode
from lens_widget.log.host_moments import HostMoments
from lens_widget.log.stats import activation_stats, host_stats
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

REAL_MODELS = ["gpt2", "bert", "resnet", "small_cnn", "llama"]
# Functions whose FLOPs torch has a formula for (reached through linear, conv, matmul...).
MATMUL_LIKE = {"linear", "conv2d", "matmul", "addmm", "baddbmm", "bmm", "mm", "einsum"}


# ---- FLOPs ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL_MODELS)
def test_op_flops_add_up_to_flop_counter_mode_of_the_forward(name):
    """The ops that do matrix work count what FlopCounterMode counts around the forward
    (torch's plain counter: the same less the attention kernels); the counter with all of
    lens's formulas counts what all the ops add up to, elementwise and norms included."""
    case = BUILDERS[name]()
    with torch.no_grad():
        with flop_counter_mode() as counter:
            case.model(*case.args, **case.kwargs)
        with FlopCounterMode(display=False) as plain:
            case.model(*case.args, **case.kwargs)
        with op_counter_mode() as everything:
            case.model(*case.args, **case.kwargs)
        log = lw.trace(case.model, case.args, case.kwargs)
    assert plain.get_total_flops() > 0
    assert matrix_flops(log.ops) == counter.get_total_flops()
    assert sum(op.flops for op in log.ops if op.flops) == everything.get_total_flops()
    assert log.flops == log.module_totals[""].flops == everything.get_total_flops()
    others = [op for op in log.ops if op.func != "scaled_dot_product_attention"]
    assert matrix_flops(others) == plain.get_total_flops()
    # Elementwise work counts one FLOP per output element; copies and views none.
    adds = [op for op in log.ops if op.func in ("add", "__add__", "relu", "gelu", "silu")]
    assert adds and all(op.flops == math.prod(op.shape) for op in adds)
    assert all(op.flops is None for op in log.ops if op.func in ("view", "transpose", "to"))


@pytest.mark.parametrize("name", ["transformer_encoder", "swin", "t5"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_flops_match_flop_counter_mode_around_the_traced_pass(name, grad):
    """The same forward, counted by FlopCounterMode (with lens's extra formulas) while the
    tracer runs it. With grad on, Swin's attention mask requires grad and CPU attention
    takes its math path (bmm): the count replays that, its scaling and masking left out."""
    case = BUILDERS[name]()
    with torch.set_grad_enabled(grad), flop_counter_mode() as around:
        log = lw.trace(case.model, case.args, case.kwargs)
    assert matrix_flops(log.ops) == around.get_total_flops() > 0
    assert log.flops > around.get_total_flops()  # and the norms, adds and activations
    linear = next(op for op in log.ops if op.func == "linear")
    assert linear.requires_grad is grad


def test_flops_of_a_linear_follow_torch_formula_and_need_no_saved_values():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    x = torch.randn(5, 16)
    saved, unsaved = lw.trace(model, x), lw.trace(model, x, save=None)
    assert [op.flops for op in saved] == [2 * 5 * 16 * 32, 5 * 32, 2 * 5 * 32 * 8]
    assert [op.flops for op in unsaved] == [op.flops for op in saved]


def test_flops_of_repeated_layers_and_of_ops_that_cannot_run_without_data():
    lin = nn.Linear(8, 8)

    def forward(x):
        for _ in range(3):
            x = lin(x)
        return x[x > 0].sum() + torch.arange(3).sum()  # nonzero-like, factory

    log = lw.trace(FunctionModule(forward), torch.randn(2, 8))
    linears = [op for op in log.ops if op.func == "linear"]
    assert [op.flops for op in linears] == [2 * 2 * 8 * 8] * 3
    assert all(op.flops is None for op in log.ops if op.func in ("getitem", "arange", "sum"))


@pytest.mark.skipif(not hasattr(torch, "_grouped_mm"), reason="this torch has no _grouped_mm")
def test_an_op_whose_meta_kernel_refuses_it_is_counted_from_its_shapes_and_logs_nothing(
    capfd, caplog
):
    """torch._grouped_mm runs on float32 CPU tensors (Mixtral's experts in transformers 5),
    but its meta kernel wants bfloat16: it had no count, and torch logged a traceback per
    count. Each of the 4 rows meets one expert's 8 x 4 weight: 2 * 4 * 8 * 4."""

    def grouped(x, w):
        return torch._grouped_mm(x, w, offs=torch.tensor([2, 4], dtype=torch.int32))

    log = lw.trace(FunctionModule(grouped), (torch.randn(4, 8), torch.randn(2, 8, 4)))
    capfd.readouterr()
    assert log["grouped_mm_1_2"].flops == 2 * 4 * 8 * 4
    assert capfd.readouterr().err == ""
    assert not [r for r in caplog.records if r.name.startswith("torch._subclasses")]


def test_param_count_and_bytes_per_op():
    log = lw.trace(nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)), torch.randn(2, 4))
    linear, norm = log["0"], log["1"]  # the ops that produced each module's output
    assert linear.param_count == 4 * 3 + 3
    assert norm.param_count == 4 * 3  # weight, bias, running mean and var
    assert linear.nbytes == 2 * 3 * 4


# ---- statistics -----------------------------------------------------------------------


def _direct(t: torch.Tensor) -> dict[str, float]:
    x = t.detach().abs() if t.is_complex() else t.detach()
    x = x.double().reshape(-1)
    finite = x[torch.isfinite(x)]
    n = finite.numel()
    return {
        "numel": t.numel(),
        "mean": float(finite.mean()),
        "std": float(finite.std()) if n > 1 else 0.0,
        "min": float(finite.min()),
        "max": float(finite.max()),
        "absmax": float(finite.abs().max()),
        "zero_fraction": float((x == 0).sum()) / t.numel(),
        "nan": int(torch.isnan(x).sum()),
        "inf": int(torch.isinf(x).sum()),
    }


def _assert_stats_equal(got, t):
    want = _direct(t)
    assert set(got) >= set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


@pytest.mark.parametrize("name", ["gpt2", "resnet"])
def test_stats_of_every_op_equal_a_direct_computation(name):
    case = BUILDERS[name]()
    log = lw.trace(case.model, case.args, case.kwargs).compute_metrics()
    checked = 0
    for op in log.ops:
        if op.activation is not None and op.activation.numel():
            _assert_stats_equal(op.stats, op.activation)
            assert op.stats.mean == op.stats["mean"]
            checked += 1
    assert checked > 20


@pytest.mark.parametrize(
    "tensor",
    [
        torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 0.0, 3.0]),
        torch.tensor([True, False, False, True, True]),
        torch.tensor([2**40 + 1, 0, -7, 3]),
        torch.tensor([1 + 2j, 0j, -3 + 4j]),
        torch.randn(64, 64).half(),
        torch.randn(8, 8).bfloat16().t(),  # non-contiguous
        torch.tensor([2.5]),
        1000 + torch.linspace(-1e-3, 1e-3, 4097),  # spread tiny against the mean
    ],
    ids=["nonfinite", "bool", "int64", "complex", "half", "bf16-strided", "one", "offset"],
)
def test_stats_of_every_dtype_equal_a_direct_computation(tensor):
    batched = activation_stats([torch.randn(3), tensor, torch.zeros(0)])
    _assert_stats_equal(batched[1], tensor)
    assert batched[2].numel == 0 and math.isnan(batched[2].mean)


def _big(fill: str, dtype: torch.dtype) -> torch.Tensor:
    """Millions of values, as many as GPT-2's logits: read in several pieces on CPU
    (log/host_moments.py), where float32 sums of squares lost digits (std off by 1e-4)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4_000_003, generator=g, dtype=dtype)
    if fill == "shifted":  # a mean that does not cancel, yet small against the spread
        x += 0.5
    elif fill == "negative":  # all below zero but one late value
        x = -x.abs() - 0.1
        x[3_999_999] = 0.5
    elif fill == "non-negative":  # ReLU-like: zeros, one -0.0, nothing negative
        x = x.relu()
        x[77] = -0.0
    elif fill == "nan-late":
        x[3_900_000] = float("nan")
    elif fill == "inf-early":
        x[3] = -float("inf")
    elif fill == "offset":  # mean large against the spread: the variance around the mean
        x = 3 + x * 1e-3
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize(
    "fill", ["shifted", "negative", "non-negative", "nan-late", "inf-early", "offset"]
)
def test_stats_of_large_tensors_in_pieces_equal_a_direct_computation(fill, dtype):
    x = _big(fill, dtype)
    _assert_stats_equal(activation_stats([x])[0], x)


@pytest.mark.parametrize(
    "tensor",
    [
        -torch.rand(300) - 1,  # all negative
        torch.rand(300) + 1,  # all positive
        torch.tensor([-0.0, 0.0, -0.0]),
        torch.tensor([-0.0, -2.0]),
        torch.tensor([1e-45, -1e-45, 3e-45]),  # subnormals
        torch.tensor([3e38, 3e38, -3e38]),  # the sum of squares overflows float32
        torch.randn(64, 96, dtype=torch.float64).t(),
        torch.randn(10, 20, 30)[:, 3:7, ::2],  # strided, read as it lies
        torch.randn(3, 30000)[:, ::3],  # strided rows longer than a BLAS row
        torch.randn(4, 3, 10000)[:, :2, :],  # rows in memory of 20000, two of them apart
        torch.tensor(2.5),
    ],
    ids=lambda t: f"{tuple(t.shape)}-{t.dtype}-{float(t.flatten()[0]):.3g}",
)
def test_stats_of_signs_zeros_and_layouts_equal_a_direct_computation(tensor):
    _assert_stats_equal(activation_stats([tensor])[0], tensor)


def test_one_tensors_stats_on_the_host_equal_the_batchs_to_the_bit():
    # what the monitor's worker runs per tensor (host_stats), one HostMoments reused across
    # tensors of every size and sign, as its buffers are kept from one to the next
    host = HostMoments()
    tensors = [
        _big("shifted", torch.float32), torch.randn(3, 5), _big("offset", torch.float64),
        torch.tensor([2.5]), torch.rand(300) + 1, torch.tensor([-0.0, 0.0, -0.0]),
        torch.tensor([3e38, 3e38, -3e38]), _big("nan-late", torch.float32),
        1000 + torch.linspace(-1e-3, 1e-3, 4097), torch.randn(70_000, dtype=torch.float64),
    ]  # fmt: skip
    for tensor in tensors:
        with np.errstate(over="ignore", invalid="ignore"):  # as the worker runs it
            ours = host_stats(tensor, host)
        assert ours == activation_stats([tensor])[0]


def test_stats_are_none_when_not_saved_and_batched_equal_one_by_one():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    x = torch.randn(3, 4)
    assert all(op.stats is None for op in lw.trace(model, x, save=None))
    one_by_one = [dict(op.stats) for op in lw.trace(model, x)]
    batched = [dict(op.stats) for op in lw.trace(model, x).compute_metrics()]
    assert one_by_one == batched
    assert batched[1]["zero_fraction"] == pytest.approx(
        float((torch.relu(model[0](x)) == 0).float().mean())
    )


# ---- module totals and the summary ----------------------------------------------------


def test_module_totals_add_up_their_ops():
    case = BUILDERS["gpt2"]()
    log = lw.trace(case.model, case.args, case.kwargs)
    totals = log.module_totals
    assert list(totals) == list(log.modules)
    for address, info in log.modules.items():
        inside = [op for op in log.ops if address == "" or address in dict(op.module_stack)]
        assert totals[address].n_ops == info.n_ops == len(inside)
        assert totals[address].bytes == sum(op.nbytes for op in inside)
        flops = [op.flops for op in inside if op.flops is not None]
        assert totals[address].flops == (sum(flops) if flops else None)
        assert totals[address].time_ms is None  # not timed
    # Every parameter counted once (the tied lm_head/wte weight too).
    assert totals[""].params == sum(p.numel() for p in case.model.parameters())
    block = sum(p.numel() for p in case.model.transformer.h[0].parameters())
    assert totals["transformer.h.0"].params == block


def test_module_params_leave_out_buffers_and_time_adds_up_when_present():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    log = lw.trace(model, torch.randn(2, 4))
    assert log.module_totals["1"].params == 6  # BatchNorm's weight and bias, not its stats
    assert "op time" not in str(log)
    timed = lw.trace(model, torch.randn(2, 4))
    timed.ops[0].time_ms, timed.ops[1].time_ms = 1.5, 2.25
    assert timed.module_totals[""].time_ms == pytest.approx(3.75)
    assert timed.module_totals["0"].time_ms == pytest.approx(1.5)
    assert "op time: 3.75 ms" in str(timed)


def test_summary_shows_flops_and_module_totals():
    text = str(lw.trace(nn.Sequential(nn.Linear(16, 32), nn.ReLU()), torch.randn(5, 16)))
    assert "FLOPs: 5.3K (2 of 2 ops have a FLOP formula)" in text
    assert "0: Linear, 1 ops, 5.1K FLOPs, 544 params" in text


# ---- the op that produced the first NaN/Inf ---------------------------------------------


class Planted(nn.Module):
    """Finite until log(h - 10) (h is a ReLU output, so h - 10 < 0 somewhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, side: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        from_input = h.sum() + side  # NaN here comes in with `side`: not produced here
        planted = torch.log(h - 10)  # produces the NaN
        y = self.fc2(planted)  # NaN in, NaN out
        return y * 2 + from_input


def test_first_nonfinite_finds_the_op_that_produced_the_nan():
    torch.manual_seed(0)
    side = torch.tensor([float("nan")])
    log = lw.trace(Planted(), (torch.randn(3, 4), side))
    assert log.first_nonfinite() is log["log_1_6"]
    nonfinite = [op.label for op in log.ops if not op.stats.finite]
    # add_1_4 comes first but its NaN came in with `side`; the ops after log_1_6 read its NaN.
    assert nonfinite == ["add_1_4", "log_1_6", "linear_2_7", "mul_1_8", "add_2_9"]


def test_first_nonfinite_finds_an_inf_and_none_when_all_is_finite():
    def forward(x):
        y = x * 2
        z = y / (y - y)  # 0/0 -> NaN, y/0 -> Inf
        return z + 1

    log = lw.trace(FunctionModule(forward), torch.tensor([1.0, 2.0]))
    assert log.first_nonfinite() is log["div_1_3"]
    assert (log["div_1_3"].stats.inf, log["div_1_3"].stats.nan) == (2, 0)
    nan = lw.trace(FunctionModule(forward), torch.zeros(2))
    assert nan.first_nonfinite() is nan["div_1_3"]
    assert (nan["div_1_3"].stats.inf, nan["div_1_3"].stats.nan) == (0, 2)
    finite = lw.trace(nn.Linear(4, 2), torch.randn(3, 4))
    assert finite.first_nonfinite() is None


def test_first_nonfinite_is_none_when_the_nan_came_from_the_input_or_weights():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    x[0, 0] = float("nan")
    assert lw.trace(model, x).first_nonfinite() is None
    with torch.no_grad():
        model[0].weight[0, 0] = float("inf")
    assert lw.trace(model, torch.randn(2, 4)).first_nonfinite() is None


def test_first_nonfinite_needs_saved_activations():
    log = lw.trace(Planted(), (torch.randn(3, 4), torch.zeros(1)), save=None)
    with pytest.raises(ValueError, match="save=None"):
        log.first_nonfinite()


def test_first_nonfinite_of_a_log_without_ops_is_none():
    # A model that returns its input (or only reshapes it through no torch call) ran no op.
    log = lw.trace(FunctionModule(lambda x: x), torch.tensor([1.0, float("nan")]))
    assert log.ops == [] and log.first_nonfinite() is None


def test_first_nonfinite_says_why_when_no_op_has_values():
    # Every op ran inside vmap: the log saved all it could, which is nothing.
    log = lw.trace(FunctionModule(lambda x: torch.func.vmap(torch.sin)(x)), torch.randn(3, 2))
    with pytest.raises(ValueError, match="torch.func transform") as info:
        log.first_nonfinite()
    assert "save=None" not in str(info.value)
