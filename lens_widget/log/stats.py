"""Summary statistics of saved activations, computed in one batch on the tensors' devices.

Each tensor gets three reductions (``var_mean``, ``aminmax``, ``count_nonzero``) queued on
its own device; the small results are stacked and copied to the host once per device and
dtype, so a GPU is synchronised a few times per batch, not once per op. NaN and Inf show in
min/max; only tensors that hold them take a second, slower pass that counts them and
describes the finite values.

Conventions (the same as the widget's inspector): mean, std (unbiased; 0 for one value),
min, max and absmax are over the finite values; ``nan`` and ``inf`` count the others;
``zero_fraction`` is over all values. bool counts as 0/1, integers exactly as float64,
complex tensors by their magnitude.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields

import torch

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
        return getattr(self, key)  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(_NAMES)

    def __len__(self) -> int:
        return len(_NAMES)


_NAMES = tuple(f.name for f in fields(ActivationStats))
_NAN = float("nan")


def activation_stats(tensors: Sequence[Tensor]) -> list[ActivationStats]:
    """Statistics of each tensor, in order."""
    results: list[ActivationStats | None] = [None] * len(tensors)
    values: list[Tensor] = []
    # (device, dtype) -> [(position, [mean, var, min, max])]; device -> [(position, nonzero)]
    queued: dict[tuple[torch.device, torch.dtype], list[tuple[int, Tensor]]] = {}
    nonzero: dict[torch.device, list[tuple[int, Tensor]]] = {}
    for i, tensor in enumerate(tensors):
        x = _real_values(tensor)
        values.append(x)
        n = x.numel()
        if n == 0:
            results[i] = ActivationStats(0, _NAN, _NAN, _NAN, _NAN, _NAN, _NAN, 0, 0)
            continue
        var, mean = torch.var_mean(x, correction=1 if n > 1 else 0)
        lo, hi = torch.aminmax(x)
        queued.setdefault((x.device, x.dtype), []).append((i, torch.stack((mean, var, lo, hi))))
        nonzero.setdefault(x.device, []).append((i, torch.count_nonzero(x)))

    moments: dict[int, list[float]] = {}
    for group in queued.values():
        rows = torch.stack([row for _, row in group]).tolist()  # one copy to the host
        moments.update((i, row) for (i, _), row in zip(group, rows, strict=True))
    counts: dict[int, int] = {}
    for group in nonzero.values():
        row = torch.stack([count for _, count in group]).tolist()
        counts.update((i, c) for (i, _), c in zip(group, row, strict=True))

    for i, (mean, var, lo, hi) in moments.items():
        n = values[i].numel()
        zero_fraction = (n - counts[i]) / n
        if all(math.isfinite(v) for v in (mean, var, lo, hi)):
            std = math.sqrt(max(var, 0.0))
            results[i] = ActivationStats(
                n, mean, std, lo, hi, max(abs(lo), abs(hi)), zero_fraction, 0, 0
            )
        else:  # NaN/Inf present (or a float32 overflow): count them, describe the rest
            results[i] = _with_nonfinite(values[i], zero_fraction)
    return [r for r in results if r is not None]


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
    finite_mask = torch.isfinite(f64)
    n_nan = int(torch.isnan(f64).sum())
    n_inf = int(torch.isinf(f64).sum())
    finite = f64[finite_mask]
    n = finite.numel()
    if n == 0:
        return ActivationStats(x.numel(), _NAN, _NAN, _NAN, _NAN, _NAN, zero_fraction, n_nan, n_inf)
    var, mean = torch.var_mean(finite, correction=1 if n > 1 else 0)
    lo, hi = (float(v) for v in torch.aminmax(finite))
    return ActivationStats(
        x.numel(),
        float(mean),
        math.sqrt(max(float(var), 0.0)),
        lo,
        hi,
        max(abs(lo), abs(hi)),
        zero_fraction,
        n_nan,
        n_inf,
    )
