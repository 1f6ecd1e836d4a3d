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
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F

from lens_widget.log.records import OpRecord
from lens_widget.log.saved_call import InputNotSaved, saved_call

ATTENTION_FUNCS = frozenset({"scaled_dot_product_attention", "multi_head_attention_forward"})

_SDPA_PARAMS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
_MHA_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


class AttentionUnavailable(ValueError):
    """The op is not an attention op, or its inputs were not saved."""


class AttentionGrid(NamedTuple):
    """How many maps one attention op has (batch items x heads) and the size of each."""

    batch: int
    heads: int
    queries: int
    keys: int


def has_attention_map(record: OpRecord) -> bool:
    return record.kind == "op" and record.func in ATTENTION_FUNCS


def _saved_arguments(record: OpRecord) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if not has_attention_map(record):
        raise AttentionUnavailable(f"{record.label} ({record.func}) is not an attention op")
    try:
        _, args, kwargs, _ = saved_call(record, copy=False)
    except (InputNotSaved, ValueError) as err:
        raise AttentionUnavailable(f"{record.label}: {err}; re-run to save it") from None
    return args, kwargs


def attention_weights(record: OpRecord) -> torch.Tensor:
    """(batch..., heads, queries, keys) float32 attention probabilities of one op."""
    args, kwargs = _saved_arguments(record)
    with torch.no_grad():
        if record.func == "scaled_dot_product_attention":
            return _sdpa_weights(_sdpa_bound(args, kwargs))
        return _mha_weights(args, kwargs)


def attention_grid(record: OpRecord) -> AttentionGrid:
    """The batch items and heads of an op's maps (batch dims before the heads flattened).

    SDPA reads (batch..., heads, queries, dim); a 3-d query is (batch, queries, dim) with
    one head. multi_head_attention_forward reads (queries, [batch,] embed) and num_heads.
    """
    args, kwargs = _saved_arguments(record)
    if record.func == "scaled_dot_product_attention":
        bound = _sdpa_bound(args, kwargs)
        query, key = bound["query"], bound["key"]
        heads = query.shape[-3] if query.dim() >= 4 else 1
        batch = math.prod(query.shape[:-3]) if query.dim() >= 4 else math.prod(query.shape[:-2])
        return AttentionGrid(batch, heads, query.shape[-2], key.shape[-2])
    bound = _MHA_SIGNATURE.bind(*args, **kwargs).arguments
    query, key = bound["query"], bound["key"]
    batch = query.shape[1] if query.dim() == 3 else 1
    return AttentionGrid(batch, int(bound["num_heads"]), query.shape[0], key.shape[0])


def attention_map(record: OpRecord, batch: int, head: int) -> torch.Tensor:
    """(queries, keys) float32 probabilities of one batch item and head, on the op's device.

    SDPA computes only that map (a long sequence's full set may not fit in memory); indices
    are those of `attention_grid` and must be in range (IndexError otherwise).
    """
    grid = attention_grid(record)
    if not (0 <= batch < grid.batch and 0 <= head < grid.heads):
        raise IndexError(f"batch {batch}, head {head} outside a {grid.batch} x {grid.heads} grid")
    args, kwargs = _saved_arguments(record)
    with torch.no_grad():
        if record.func == "scaled_dot_product_attention":
            return _sdpa_weights(_sdpa_slice(_sdpa_bound(args, kwargs), batch, head))
        weights = _mha_weights(args, kwargs)
        return weights.reshape(grid.batch, grid.heads, grid.queries, grid.keys)[batch, head]


def _sdpa_bound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    return dict(zip(_SDPA_PARAMS, args, strict=False)) | kwargs


def _sdpa_slice(bound: dict[str, Any], batch: int, head: int) -> dict[str, Any]:
    """The call's arguments cut to one batch item and head (views of the saved tensors)."""
    query, key, mask = bound["query"], bound["key"], bound.get("attn_mask")
    n_queries, n_keys = query.shape[-2], key.shape[-2]
    with_heads = query.dim() >= 4
    lead = query.shape[:-3] if with_heads else query.shape[:-2]
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(batch), lead)) if lead else ()
    sliced = dict(bound, enable_gqa=False)
    if with_heads:
        heads, key_heads = query.shape[-3], key.shape[-3]
        # GQA: query head h reads key head h // (heads / key_heads); a single key head serves all.
        key_head = head if key_heads == heads else head // (heads // key_heads)
        sliced["query"] = query[index][head]
        sliced["key"] = key.expand(*lead, key_heads, n_keys, key.shape[-1])[index][key_head]
        if mask is not None:
            sliced["attn_mask"] = mask.expand(*lead, heads, n_queries, n_keys)[index][head]
    else:
        sliced["query"] = query[index]
        sliced["key"] = key.expand(*lead, n_keys, key.shape[-1])[index]
        if mask is not None:
            sliced["attn_mask"] = mask.expand(*lead, n_queries, n_keys)[index]
    return sliced


def _sdpa_weights(bound: dict[str, Any]) -> torch.Tensor:
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
