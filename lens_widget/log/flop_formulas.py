"""FLOP formulas torch lacks, for aten attention kernels, handed to ``FlopCounterMode``.

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


# Forward kernels with query, key and value first and no torch formula; a name this torch
# does not have is left out.
_SDPA_FORWARD_KERNELS = (
    "_scaled_dot_product_flash_attention_for_cpu",  # CPU
    "_scaled_dot_product_fused_attention_overrideable",  # XPU and out-of-tree backends
    "_scaled_dot_product_attention_math_for_mps",  # MPS
)


def _extra_formulas() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    return {
        getattr(aten, name): sdpa_forward_flop
        for name in _SDPA_FORWARD_KERNELS
        if hasattr(aten, name)
    }


# Kernel (OpOverloadPacket) -> formula on shapes, as FlopCounterMode's custom_mapping takes.
EXTRA_FLOP_FORMULAS: dict[Any, Callable[..., int]] = _extra_formulas()


def flop_counter_mode() -> FlopCounterMode:
    """A silent ``FlopCounterMode`` with torch's formulas and the ones above."""
    return FlopCounterMode(display=False, custom_mapping=EXTRA_FLOP_FORMULAS)
