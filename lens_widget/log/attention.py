"""Attention weights of a fused attention op, recomputed from its saved inputs.

`scaled_dot_product_attention` never materialises its softmax, so there is no op whose
activation is the attention map. Given the saved query, key and mask of one SDPA call (or the
arguments of `multi_head_attention_forward`), this recomputes `softmax(Q Kᵀ · scale + mask)`
with the call's own scale, causal flag and GQA setting, and dropout off. Rows a query cannot
attend from at all (padding) are zeros, as in SDPA's own output.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F

from lens_widget.log.records import OpRecord
from lens_widget.log.saved_call import InputNotSaved, saved_call

ATTENTION_FUNCS = frozenset({"scaled_dot_product_attention", "multi_head_attention_forward"})

_SDPA_PARAMS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


class AttentionUnavailable(ValueError):
    """The op is not an attention op, or its inputs were not saved."""


def has_attention_map(record: OpRecord) -> bool:
    return record.kind == "op" and record.func in ATTENTION_FUNCS


def attention_weights(record: OpRecord) -> torch.Tensor:
    """(batch..., heads, queries, keys) float32 attention probabilities of one op."""
    if not has_attention_map(record):
        raise AttentionUnavailable(f"{record.label} ({record.func}) is not an attention op")
    try:
        _, args, kwargs = saved_call(record, copy=False)
    except (InputNotSaved, ValueError) as err:
        raise AttentionUnavailable(f"{record.label}: {err}; re-run to save it") from None
    with torch.no_grad():
        if record.func == "scaled_dot_product_attention":
            return _sdpa_weights(args, kwargs)
        return _mha_weights(args, kwargs)


def _sdpa_weights(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    bound = dict(zip(_SDPA_PARAMS, args, strict=False)) | kwargs
    query, key = bound["query"].float(), bound["key"].float()
    if bound.get("enable_gqa") and key.shape[-3] != query.shape[-3]:
        key = key.repeat_interleave(query.shape[-3] // key.shape[-3], dim=-3)
    scale = bound.get("scale")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = query @ key.transpose(-2, -1) * scale
    n_queries, n_keys = scores.shape[-2:]
    if bound.get("is_causal"):
        causal = torch.ones(n_queries, n_keys, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    mask = bound.get("attn_mask")
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask.float()
    # A query that may attend to nothing (a padding row) gets zeros, as SDPA's output does.
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)


def _mha_weights(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    bound = _MHA_SIGNATURE.bind(*args, **kwargs)
    bound.arguments.update(need_weights=True, average_attn_weights=False, training=False)
    _, weights = F.multi_head_attention_forward(*bound.args, **bound.kwargs)
    if weights is None:
        raise AttentionUnavailable("multi_head_attention_forward returned no weights")
    return weights.float()
