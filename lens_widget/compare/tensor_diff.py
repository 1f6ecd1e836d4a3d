"""How far apart two tensors are: max |a-b|, ||a-b|| / ||a||, cosine, and "close?".

Works pair by pair (never more than one pair's working copies alive) on the pair's device
when both sides share one, else on the CPU; reduced-precision and integer values are
compared in float32 / float64. The reductions of a batch are queued on their devices and
copied to the host once per device; pairs whose results are not finite (NaN or Inf in the
values) take a second pass in which positions equal on both sides (the same Inf, NaN on
both) count as equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from lens_widget.log.stats import values_key

Tensor = torch.Tensor


@dataclass(frozen=True)
class ValueDiff:
    """Differences of one op's outputs (all of them together) between run A and run B.

    ``max_abs``: the largest |a - b|. ``rel_l2``: ||a - b|| / ||a|| (0 when both are zero,
    inf when only A is). ``cosine``: <a, b> / (||a|| ||b||) over the positions finite on
    both sides (1 when both are all zero, 0 when one is).
    """

    max_abs: float
    rel_l2: float
    cosine: float


# Per output pair: max |d|, ||d||, ||a||, ||b||, <a, b>
_Sums = tuple[float, float, float, float, float]
_IDENTICAL = ValueDiff(0.0, 0.0, 1.0)


def value_diffs(pairs: Sequence[tuple[Sequence[Tensor], Sequence[Tensor]]]) -> list[ValueDiff]:
    """One ValueDiff per (A outputs, B outputs) pair of equal shapes."""
    sums: dict[tuple[int, int], _Sums] = {}
    queued: dict[torch.device, list[tuple[tuple[int, int], Tensor]]] = {}
    identical: set[int] = set()
    # A view op's output holds its input's values: each pair of values is compared once.
    first_of: dict[tuple[object, ...], tuple[int, int]] = {}
    copies: dict[tuple[int, int], tuple[int, int]] = {}
    for i, (outputs_a, outputs_b) in enumerate(pairs):
        if all(_same_values(a, b) for a, b in zip(outputs_a, outputs_b, strict=True)):
            identical.add(i)  # nothing to compute (a log compared with itself)
            continue
        for j, (a, b) in enumerate(zip(outputs_a, outputs_b, strict=True)):
            first = first_of.setdefault((values_key(a), values_key(b)), (i, j))
            if first != (i, j):
                copies[i, j] = first
            elif a.numel() == 0:
                sums[i, j] = (0.0, 0.0, 0.0, 0.0, 0.0)
            else:
                wa, wb = working_pair(a, b)
                queued.setdefault(wa.device, []).append(((i, j), _reductions(wa, wb)))
    for group in queued.values():
        rows = torch.stack([row for _, row in group]).tolist()  # one copy to the host
        for (key, _), row in zip(group, rows, strict=True):
            if all(math.isfinite(v) for v in row):
                sums[key] = (row[0], row[1], row[2], row[3], row[4])
            else:
                i, j = key
                sums[key] = _masked_sums(*working_pair(pairs[i][0][j], pairs[i][1][j]))
    for key, first in copies.items():
        sums[key] = sums[first]
    return [
        _IDENTICAL if i in identical else _combine([sums[i, j] for j in range(len(pair[0]))])
        for i, pair in enumerate(pairs)
    ]


def close_everywhere(a: Tensor, b: Tensor, *, atol: float, rtol: float) -> bool:
    """|a - b| <= atol + rtol * |b| at every position (NaN matches NaN, Inf the same Inf)."""
    if _same_values(a, b):
        return True
    wa, wb = working_pair(a, b)
    return bool(torch.isclose(wa, wb, rtol=rtol, atol=atol, equal_nan=True).all())


def working_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Both on one device (theirs, or the CPU), in one dtype wide enough for both."""
    device = a.device if a.device == b.device else torch.device("cpu")
    dtype = _working_dtype(a.dtype, b.dtype)
    return a.detach().to(device=device, dtype=dtype), b.detach().to(device=device, dtype=dtype)


def _working_dtype(x: torch.dtype, y: torch.dtype) -> torch.dtype:
    wide = torch.float64 in (x, y) or torch.complex128 in (x, y) or _is_int(x) or _is_int(y)
    if x.is_complex or y.is_complex:
        return torch.complex128 if wide else torch.complex64
    return torch.float64 if wide else torch.float32


def _is_int(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _same_values(a: Tensor, b: Tensor) -> bool:
    """The very same memory seen the same way (a log compared with itself)."""
    return a is b or values_key(a) == values_key(b)


def _reductions(a: Tensor, b: Tensor) -> Tensor:
    d = a - b
    norm = torch.linalg.vector_norm
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    dot = torch.vdot(flat_a, flat_b).real if a.is_complex() else torch.dot(flat_a, flat_b)
    values = (_max_abs(d), norm(d), norm(a), norm(b), dot)
    return torch.stack([v.to(torch.float64) for v in values])


def _max_abs(d: Tensor) -> Tensor:
    """max |d| (NaN if any): from aminmax, which on the CPU is many times faster than the
    inf-norm."""
    if d.is_complex():
        return d.abs().max()
    lo, hi = torch.aminmax(d)
    return torch.maximum(-lo, hi)


def _masked_sums(a: Tensor, b: Tensor) -> _Sums:
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    d = torch.where(same, torch.zeros((), dtype=a.dtype, device=a.device), a - b)
    both_finite = torch.isfinite(a) & torch.isfinite(b)
    fa, fb = a[both_finite], b[both_finite]
    norm = torch.linalg.vector_norm
    dot = torch.vdot(fa, fb).real if a.is_complex() else torch.dot(fa, fb)
    values = (_max_abs(d), norm(d), norm(fa), norm(fb), dot)
    row = torch.stack([v.to(torch.float64) for v in values]).tolist()
    return (row[0], row[1], row[2], row[3], row[4])


def _combine(per_output: list[_Sums]) -> ValueDiff:
    max_abs = max((s[0] for s in per_output), default=0.0)
    if any(math.isnan(s[0]) for s in per_output):
        max_abs = math.nan  # max() would skip a NaN that is not first
    l2 = math.sqrt(sum(s[1] ** 2 for s in per_output))
    norm_a = math.sqrt(sum(s[2] ** 2 for s in per_output))
    norm_b = math.sqrt(sum(s[3] ** 2 for s in per_output))
    dot = sum(s[4] for s in per_output)
    if l2 == 0:  # equal values: exactly 0 and 1, not within rounding
        rel_l2, cosine = 0.0, 1.0
    elif norm_a == 0:
        rel_l2, cosine = math.inf, 0.0
    else:
        rel_l2 = l2 / norm_a
        cosine = max(-1.0, min(1.0, dot / (norm_a * norm_b))) if norm_b > 0 else 0.0
    return ValueDiff(max_abs, rel_l2, cosine)
