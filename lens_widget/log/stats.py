"""Summary statistics of saved activations, computed in one batch on the tensors' devices.

Each distinct set of values gets five reading passes (sum, sum of squares, min, max and
the non-zero count), with nothing the size of the tensor allocated. On CPU they run at once,
through numpy on the same memory, in cache-sized pieces (``host_moments.py``: about 1.5x
faster than torch's reductions on one core); on other devices they are queued, and the small
results are stacked and copied to the host once per device and dtype, so a GPU is
synchronised a few times per batch, not once per op. Views that hold the same elements in
another order (a ``view``, ``transpose`` or ``permute`` of another output) are the same
set: it is read once, in memory order (the fastest order, see ``_in_memory_order``). The
variance comes from the sum of squares; where the mean is large against the spread (so that
formula would cancel) a second pass computes it around the mean. NaN and Inf show in the
sum: only tensors that hold them take a slower pass that counts them and describes the
finite values.

Conventions (the same as the widget's inspector): mean, std (unbiased; 0 for one value),
min, max and absmax are over the finite values; ``nan`` and ``inf`` count the others;
``zero_fraction`` is over all values. bool counts as 0/1, integers exactly as float64,
complex tensors by their magnitude.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields

import torch

from lens_widget.log.host_moments import HostMoments, Moments

Tensor = torch.Tensor


@dataclass(frozen=True, slots=True)
class ActivationStats(Mapping[str, float]):
    """Statistics of one tensor; a mapping (``stats["mean"]``) and an object (``stats.mean``)."""

    numel: int
    mean: float
    std: float
    min: float
    max: float
    absmax: float
    zero_fraction: float
    nan: int
    inf: int

    @property
    def finite(self) -> bool:
        return self.nan == 0 and self.inf == 0

    def __getitem__(self, key: str) -> float:
        if key not in _NAMES:
            raise KeyError(f"{key!r} is not a statistic; there are {', '.join(_NAMES)}")
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_NAMES)

    def __len__(self) -> int:
        return len(_NAMES)


_NAMES = tuple(f.name for f in fields(ActivationStats))
_NAN = float("nan")
_EMPTY = ActivationStats(0, _NAN, _NAN, _NAN, _NAN, _NAN, _NAN, 0, 0)


def activation_stats(tensors: Sequence[Tensor]) -> list[ActivationStats]:
    """Statistics of each tensor, in order (a sparse one's of its dense values)."""
    tensors = [t if t.layout == torch.strided else t.to_dense() for t in tensors]
    distinct: dict[tuple[object, ...], int] = {}  # same elements, any order -> first
    ordered = [_in_memory_order(t) for t in tensors]
    firsts = [distinct.setdefault(values_key(t), i) for i, t in enumerate(ordered)]
    todo = [i for i in distinct.values() if tensors[i].numel() > 0]

    # Pass 1: sum, sum of squares, min, max and the non-zero count of every tensor; on CPU
    # at once through numpy (host_moments.py), elsewhere queued on the device.
    host = HostMoments()
    on_host: dict[int, Moments] = {}
    for i in todo:
        if ordered[i].device.type == "cpu" and HostMoments.accepts(x := _real_values(ordered[i])):
            on_host[i] = host(x)
    queued = [i for i in todo if i not in on_host]
    rows = dict(zip(queued, _batched([(ordered[i], _moments) for i in queued]), strict=True))
    results: dict[int, ActivationStats] = {}
    refine: list[tuple[int, float]] = []  # (position, mean) of tensors the formula fails
    for i in todo:
        if i in on_host:
            moments = on_host[i]
        else:
            total, norm, lo, hi, nonzero = rows[i]
            moments = (total, norm * norm, lo, hi, nonzero)
        results[i], cancels = _described(tensors[i], moments)
        if cancels:
            refine.append((i, results[i].mean))

    # Pass 2 (few tensors): the variance around the mean, two passes, exact.
    spreads = {i: host.spread(_real_values(ordered[i]), mean) for i, mean in refine if i in on_host}
    queued_refine = [(i, mean) for i, mean in refine if i not in on_host]
    around = _batched([(ordered[i], _spread_around(mean)) for i, mean in queued_refine])
    spreads.update((i, spread) for (i, _), (spread,) in zip(queued_refine, around, strict=True))
    for i, spread in spreads.items():
        results[i] = _with_spread(results[i], spread)
    return [results.get(first, _EMPTY) for first in firsts]


def host_stats(x: Tensor, host: HostMoments) -> ActivationStats:
    """``activation_stats([x])[0]`` for a contiguous, non-empty `x` that `host` accepts, in
    fewer calls: a worker thread summarising one tensor at a time runs this, and each of
    its calls into Python takes the GIL from the training thread. The caller ignores
    numpy's overflow and invalid warnings (``np.errstate``), once for all its tensors."""
    stats, cancels = _described(x, host.unguarded(x))
    return _with_spread(stats, host.spread(x, stats.mean)) if cancels else stats


def _described(
    tensor: Tensor, moments: tuple[float, float, float, float, float]
) -> tuple[ActivationStats, bool]:
    """The statistics of `tensor` (non-empty) from its moments, and whether its std must be
    computed again around the mean: where the mean is large against the spread, the sum of
    squares minus n mean^2 would cancel digits. `moments`: sum, sum of squares, min, max and
    the non-zero count."""
    total, squares, lo, hi, nonzero = moments
    n = tensor.numel()
    mean = total / n
    zero_fraction = (n - nonzero) / n
    if not (
        math.isfinite(total) and math.isfinite(squares) and math.isfinite(lo) and math.isfinite(hi)
    ):  # NaN/Inf present (or a float32 overflow): count them, describe the rest
        return _with_nonfinite(_real_values(tensor), zero_fraction), False
    var = max(squares - n * mean * mean, 0.0) / (n - 1) if n > 1 else 0.0
    stats = ActivationStats(
        n, mean, math.sqrt(var), lo, hi, max(abs(lo), abs(hi)), zero_fraction, 0, 0
    )
    return stats, mean * mean > var and n > 1


def _with_spread(stats: ActivationStats, spread: float) -> ActivationStats:
    """`stats` with its std from the spread around the mean, sqrt(sum((x - mean)**2))."""
    return dataclasses.replace(stats, std=spread / math.sqrt(stats.numel - 1))


def values_key(t: Tensor) -> tuple[object, ...]:
    """Equal for tensors that hold the same values in the same order (a contiguous view of
    another is the same values whatever its shape)."""
    layout = (t.numel(),) if t.is_contiguous() else (tuple(t.shape), t.stride())
    return (t.device, t.dtype, t.data_ptr(), *layout)


def _in_memory_order(t: Tensor) -> Tensor:
    """The elements of `t` as a view walking memory in increasing address order: dims
    sorted by stride, size-1 dims dropped, adjacent dims merged. A permutation of the
    same elements, so every statistic is the same; the reductions run fastest this way,
    and a transposed or reshaped view of another output gets the same key."""
    if t.is_contiguous():  # already in order (most outputs): keep it, and the time
        return t
    dims = sorted(
        (stride, size) for size, stride in zip(t.shape, t.stride(), strict=True) if size != 1
    )
    merged: list[list[int]] = []  # [stride, size], increasing stride
    for stride, size in dims:
        if merged and merged[-1][0] * merged[-1][1] == stride:
            merged[-1][1] *= size
        else:
            merged.append([stride, size])
    sizes = [size for _, size in reversed(merged)]
    strides = [stride for stride, _ in reversed(merged)]
    if sizes == list(t.shape) and strides == list(t.stride()):
        return t
    return t.detach().as_strided(sizes, strides, t.storage_offset())


def _moments(x: Tensor) -> list[Tensor]:
    # amin and amax are each about 3x faster than aminmax (torch 2.13 on CPU); the sum is
    # faster than the mean, which Python divides out exactly enough in float64
    return [x.sum(), torch.linalg.vector_norm(x), x.amin(), x.amax(), torch.count_nonzero(x)]


def _spread_around(mean: float) -> Callable[[Tensor], list[Tensor]]:
    def spread(x: Tensor) -> list[Tensor]:
        return [torch.linalg.vector_norm(x - mean)]

    return spread


def _batched(
    work: Sequence[tuple[Tensor, Callable[[Tensor], list[Tensor]]]],
) -> list[list[float]]:
    """Run each reduction on its tensor's device; one copy to the host per device and
    result dtype (the results go to Python floats, exact for float32 and float64)."""
    buckets: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
    places: list[list[tuple[list[Tensor], int]]] = []
    for tensor, reductions in work:
        row = []
        for result in reductions(_real_values(tensor)):
            bucket = buckets.setdefault((result.device, result.dtype), [])
            row.append((bucket, len(bucket)))
            bucket.append(result)
        places.append(row)
    values = {id(bucket): torch.stack(bucket).tolist() for bucket in buckets.values()}
    return [[float(values[id(bucket)][i]) for bucket, i in row] for row in places]


def _real_values(tensor: Tensor) -> Tensor:
    """The values as a float tensor the reductions accept, on the tensor's own device."""
    t = tensor.detach()
    if t.is_complex():
        return t.abs()
    if t.dtype in (torch.float32, torch.float64):
        return t
    if t.dtype == torch.bool or t.is_floating_point():  # half, bfloat16, float8: sum in f32
        return t.float()
    return t.double()  # integers: exact up to 2**53, where float32 rounds ids and counts


def _with_nonfinite(x: Tensor, zero_fraction: float) -> ActivationStats:
    f64 = x.double()
    n_nan = int(torch.isnan(f64).sum())
    n_inf = int(torch.isinf(f64).sum())
    finite = f64[torch.isfinite(f64)]
    n = finite.numel()
    if n == 0:
        return ActivationStats(x.numel(), _NAN, _NAN, _NAN, _NAN, _NAN, zero_fraction, n_nan, n_inf)
    mean = finite.mean()
    std = float(torch.linalg.vector_norm(finite - mean)) / math.sqrt(n - 1) if n > 1 else 0.0
    lo, hi = (float(v) for v in torch.aminmax(finite))
    return ActivationStats(
        x.numel(), float(mean), std, lo, hi, max(abs(lo), abs(hi)), zero_fraction, n_nan, n_inf
    )
