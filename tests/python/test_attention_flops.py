"""FLOPs of attention: the kernels torch has no formula for (CPU's fused SDPA) count the two
matmuls, as torch's formula for the CUDA kernels does, and torch's registry is left as found."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from flop_kinds import matrix_flops
from function_module import FunctionModule
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

import lens_widget as lw
from lens_widget.log.flop_formulas import flop_counter_mode
from model_zoo import TEST_MODELS as BUILDERS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

B, H, LQ, LK, D = 2, 4, 5, 7, 8


def _qkv(kv_heads: int = H) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(B, H, LQ, D, generator=g),
        torch.randn(B, kv_heads, LK, D, generator=g),
        torch.randn(B, kv_heads, LK, D, generator=g),
    )


CALLS = {
    "plain": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), H),
    "causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), H),
    "bool_mask": (
        lambda q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=torch.ones(LQ, LK, dtype=torch.bool).tril()
        ),
        H,
    ),
    "float_mask": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(LQ, LK)),
        H,
    ),
    "gqa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), 2),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("name", list(CALLS))
def test_sdpa_counts_its_two_matmuls(name, grad):
    """QK^T and AV, 2 FLOPs per multiply-add, over every query head and the full Lq x Lk
    scores (a causal or boolean mask is not subtracted, as in torch's formula)."""
    call, kv_heads = CALLS[name]
    q, k, v = (t.requires_grad_(grad) for t in _qkv(kv_heads))
    with torch.set_grad_enabled(grad):
        log = lw.trace(FunctionModule(call), (q, k, v))
        # torch counts the same call through its math backend (bmm) alike
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as math:
            call(q, k, v)
    (op,) = [op for op in log.ops if op.func == "scaled_dot_product_attention"]
    assert op.flops == 4 * B * H * LQ * LK * D == math.get_total_flops()
    assert log.flops == op.flops


def test_sdpa_count_equals_torch_formula_for_the_cuda_kernels():
    q, k, v = _qkv()
    torch_formula = flop_counter.flop_registry[torch.ops.aten._scaled_dot_product_flash_attention]
    log = lw.trace(FunctionModule(lambda *t: F.scaled_dot_product_attention(*t)), (q, k, v))
    assert log.ops[0].flops == torch_formula(q, k, v, out_val=None)


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert", "t5"])
def test_transformer_attention_ops_have_flops(name):
    """Each attention op of a traced transformer (attn_implementation="sdpa", random
    weights) counts what torch's formula gives its query, key and value; the whole log
    counts what FlopCounterMode counts around the forward run on torch's math backend."""
    case = BUILDERS[name]()
    if case.model.config._attn_implementation != "sdpa":  # T5 before transformers 4.5x
        pytest.skip(f"this transformers runs {type(case.model).__name__} without SDPA")
    torch_formula = flop_counter.flop_registry[torch.ops.aten._scaled_dot_product_flash_attention]
    with torch.no_grad():
        log = lw.trace(case.model, case.args, case.kwargs)
        with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as math:
            case.model(*case.args, **case.kwargs)
    attention = [op for op in log.ops if op.func == "scaled_dot_product_attention"]
    assert attention
    for op in attention:
        q, k, v = (log[parent].shape for parent in op.parents[:3])
        assert op.flops is not None
        assert op.flops == torch_formula(q, k, v, out_val=None) > 0
    assert matrix_flops(log.ops) == math.get_total_flops()


@pytest.mark.parametrize("inference", [False, True], ids=["train", "eval_no_grad"])
@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_counts_its_linears_and_its_attention(need_weights, inference):
    """nn.MultiheadAttention: in and out projections plus the two attention matmuls,
    whether it runs SDPA (need_weights=False), bmm (need_weights=True) or, in eval without
    grad, torch's fused fast path (one _native_multi_head_attention op)."""
    e, heads, length, batch = 32, 4, 6, 3
    mha = nn.MultiheadAttention(e, heads, batch_first=True).train(not inference)
    x = torch.randn(batch, length, e)
    with torch.set_grad_enabled(not inference):
        log = lw.trace(mha, (x, x, x), {"need_weights": need_weights})
    expected = "_native_multi_head_attention" if inference else "multi_head_attention_forward"
    (op,) = [op for op in log.ops if op.func == expected]
    tokens = batch * length
    linears = 2 * tokens * e * 3 * e + 2 * tokens * e * e
    assert op.flops == linears + 4 * batch * heads * length * length * (e // heads)


def test_counting_leaves_torch_registry_as_found():
    before = dict(flop_counter.flop_registry)
    lw.trace(FunctionModule(lambda *t: F.scaled_dot_product_attention(*t)), _qkv())
    assert flop_counter.flop_registry == before
    assert torch.ops.aten._scaled_dot_product_flash_attention_for_cpu not in before
    with flop_counter_mode() as counter:  # lens's formulas reach only its own counters
        F.scaled_dot_product_attention(*_qkv())
    with FlopCounterMode(display=False) as plain:
        F.scaled_dot_product_attention(*_qkv())
    assert counter.get_total_flops() == 4 * B * H * LQ * LK * D
    assert plain.get_total_flops() == 0


def test_a_fast_path_encoder_layer_counts_what_its_slow_path_counts():
    """nn.TransformerEncoderLayer in eval without grad is one fused op
    (_transformer_encoder_layer_fwd): it counts the matmuls its slow path runs."""
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=48, dropout=0.0, batch_first=True)
    x = torch.randn(3, 6, 32)
    with torch.no_grad():
        fast = lw.trace(layer.eval(), (x,))
    slow = lw.trace(layer.eval(), (x,))  # grad enabled: torch's Python path, op by op
    (fused,) = [op for op in fast.ops if op.func == "_transformer_encoder_layer_fwd"]
    assert fused.flops == matrix_flops(slow.ops) > 0
