"""FLOP formulas torch lacks, for aten attention kernels and grouped matrix multiplies
(mixture-of-experts layers), handed to ``FlopCounterMode``; elementwise and norm kernels are
pointwise_flops.py's.

``torch.utils.flop_counter`` counts the CUDA attention kernels (flash, memory-efficient,
cuDNN) but not the ones other devices run: on CPU ``scaled_dot_product_attention`` goes to
``_scaled_dot_product_flash_attention_for_cpu`` (a fused kernel that does not decompose), so
a transformer's attention counted 0 there. These formulas count those kernels the way torch
counts the CUDA ones (``sdpa_flop_count``): the two matmuls, Q @ K^T and softmax(...) @ V,
at 2 FLOPs per multiply-add, over all Lq x Lk scores. Not counted, as in torch: the scaling,
masking and softmax, and the scores a causal or boolean mask leaves out (a causal call counts
the full square). With grouped-query attention the kernel pairs each query head with its
key/value head: every query head counts.

They are passed as ``FlopCounterMode(custom_mapping=...)``, never registered into torch's
global ``flop_registry``: counting leaves torch as it found it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from lens_widget.log.pointwise_flops import POINTWISE_FLOP_FORMULAS

_Shape = Sequence[int]


def _grouped_heads(query: _Shape, key: _Shape, value: _Shape) -> tuple[_Shape, _Shape]:
    """Key and value shapes with as many heads as the query (grouped-query attention shares
    one key/value head between several query heads; older torch formulas want equal heads)."""
    heads = query[1]
    return (key[0], heads, *key[2:]), (value[0], heads, *value[2:])


def sdpa_forward_flop(
    query_shape: _Shape,
    key_shape: _Shape,
    value_shape: _Shape,
    *args: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """FLOPs of an attention kernel whose first arguments are query, key and value of shape
    (batch, heads, length, head dim): torch's own ``sdpa_flop_count``."""
    key_shape, value_shape = _grouped_heads(query_shape, key_shape, value_shape)
    return int(sdpa_flop_count(query_shape, key_shape, value_shape))


def grouped_mm_flop(a_shape: _Shape, b_shape: _Shape, *args: Any, **kwargs: Any) -> int:
    """FLOPs of ``torch._grouped_mm(a, b, offs=...)`` (``F.grouped_mm``): 2 per multiply-add,
    as torch counts ``mm`` and ``bmm``. Each row of `a` meets one group of `b`, whatever the
    offsets, so the count follows from the shapes: (M, K) x (G, K, N) -> 2*M*K*N (a MoE's
    tokens through their experts); (G, M, K) x (G, K, N) -> 2*G*M*K*N; (M, K) x (K, N) split
    along K into G groups -> 2*M*K*N; (G, M, K) x (K, N) split along N -> 2*G*M*K*N/G."""
    if len(a_shape) == 2 and len(b_shape) == 3:
        (m, k), n = a_shape, b_shape[2]
        return 2 * m * k * n
    if len(a_shape) == 3 and len(b_shape) == 3:
        g, m, k = a_shape
        return 2 * g * m * k * b_shape[2]
    if len(a_shape) == 2 and len(b_shape) == 2:
        (m, k), n = a_shape, b_shape[1]
        return 2 * m * k * n
    if len(a_shape) == 3 and len(b_shape) == 2:  # b's columns split among the G groups
        _, m, k = a_shape
        return 2 * m * k * b_shape[1]
    return 0


def _tokens(shape: _Shape) -> tuple[int, int, int]:
    """(batch, length, width) of a (..., length, width) input, the batch dims multiplied."""
    *lead, length, width = shape
    batch = 1
    for size in lead:
        batch *= size
    return batch, length, width


def native_mha_flop(query: _Shape, key: _Shape, *shapes: _Shape) -> int:
    """FLOPs of ``torch._native_multi_head_attention`` (nn.MultiheadAttention's fast path):
    what its slow path's matmuls count, as torch counts them: the query projection, the key
    and value projections, the two attention matmuls over all heads, the output projection."""
    batch, lq, width = _tokens(query)
    lk = key[-2]
    projections = 2 * batch * (lq + 2 * lk) * width * width + 2 * batch * lq * width * width
    return projections + 4 * batch * lq * lk * width


def encoder_layer_flop(src: _Shape, *weights: _Shape) -> int:
    """FLOPs of ``torch._transformer_encoder_layer_fwd`` (nn.TransformerEncoderLayer's fast
    path): its self-attention as `native_mha_flop` and its two feed-forward linears. The
    weights come in the kernel's order: qkv, its bias, out projection, its bias, the two
    norms' weights and biases, then the feed-forward weights (width F x E, then E x F)."""
    batch, length, width = _tokens(src)
    if len(weights) < 11:
        return 0
    hidden = weights[8][0]
    return native_mha_flop(src, src) + 4 * batch * length * width * hidden


# torch's fused fast paths, by their aten names (capture/fast_paths.py keeps them as they run).
_FUSED: dict[str, Callable[..., int]] = {
    "_native_multi_head_attention": native_mha_flop,
    "_transformer_encoder_layer_fwd": encoder_layer_flop,
}


# Forward kernels with query, key and value first and no torch formula; a name this torch
# does not have is left out.
_SDPA_FORWARD_KERNELS = (
    "_scaled_dot_product_flash_attention_for_cpu",  # CPU
    "_scaled_dot_product_fused_attention_overrideable",  # XPU and out-of-tree backends
    "_scaled_dot_product_attention_math_for_mps",  # MPS
)


def _extra_formulas() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    found: dict[Any, Callable[..., int]] = {
        getattr(aten, name): sdpa_forward_flop
        for name in _SDPA_FORWARD_KERNELS
        if hasattr(aten, name)
    }
    if hasattr(aten, "_grouped_mm"):
        found[aten._grouped_mm] = grouped_mm_flop
    # the fused fast paths, so a FlopCounterMode around a pass counts what their records count
    for name, formula in _FUSED.items():
        if hasattr(aten, name):
            found[getattr(aten, name)] = _on_shapes(formula)
    return found


def _on_shapes(formula: Callable[..., int]) -> Callable[..., int]:
    """`formula` over the tensor shapes among a kernel's arguments (FlopCounterMode passes
    the others, embed_dim, num_heads, flags, as they are)."""

    def count(*args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        return formula(*[a for a in args if isinstance(a, torch.Size)])

    return count


def _grouped_mm_functions() -> tuple[Callable[..., Any], ...]:
    found = (getattr(torch, "_grouped_mm", None), getattr(torch.nn.functional, "grouped_mm", None))
    return tuple(f for f in found if f is not None)


# Functions counted from their arguments' shapes without running them: torch._grouped_mm's
# meta kernel refuses float32 CPU tensors, which its real kernel runs (Mixtral's experts).
# torch's fused fast paths (capture/fast_paths.py keeps them as they run) have no formula and
# no meta kernel that decomposes: counted from their tensors' shapes, in the order they take them.
SHAPE_COUNTED: dict[Callable[..., Any], Callable[..., int]] = {
    **dict.fromkeys(_grouped_mm_functions(), grouped_mm_flop),
    **{getattr(torch, name): formula for name, formula in _FUSED.items() if hasattr(torch, name)},
}


# Kernel (OpOverloadPacket) -> formula on shapes, as FlopCounterMode's custom_mapping takes.
EXTRA_FLOP_FORMULAS: dict[Any, Callable[..., int]] = _extra_formulas()


def flop_counter_mode() -> FlopCounterMode:
    """A silent ``FlopCounterMode`` with torch's formulas and the ones above: the matrix work
    of a forward (what `log.flops` counts less the elementwise and norm ops)."""
    return FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS)


def op_counter_mode() -> FlopCounterMode:
    """The counter one recorded call is replayed under: also the elementwise and norm
    formulas (pointwise_flops.py); `recorded_flops` reads its counts."""
    formulas = {**EXTRA_FLOP_FORMULAS, **POINTWISE_FLOP_FORMULAS}
    return FlopCounterMode(display=False, custom_mapping=formulas)
