"""The five reading passes of ``stats.py`` (sum, sum of squares, min, max, non-zero count)
for float32/float64 tensors in CPU memory, through numpy on the same memory (no copy).

On one core these passes are bound by the arithmetic more than by memory, and numpy (2.x)
does three of them with less of it than torch (2.13), at a smaller cost per call:

- sum of squares: dot products of rows of 8192 values (``np.vecdot``, BLAS), added in
  float64: faster than ``torch.linalg.vector_norm`` and more exact. Rows that short keep
  OpenBLAS on the calling thread (it splits a dot product of over 10000 values across
  threads, which on a busy machine waits for a free core);
- min and max: the values' bits read as integers. Floats with the sign bit clear sort as
  their bits read as signed integers, and floats with it set sort backwards as their bits
  read as unsigned integers, so the signed maximum is the largest non-negative value and
  the unsigned maximum the most negative one; integer max is ~1.6x faster than float
  min/max. A chunk with no value of one sign takes one more integer pass for that side;
- non-zero count: nothing to count where min and max have one sign; otherwise ``x != 0``
  into a reused bool buffer, then ``all`` (a fast check: most activations hold no zero)
  and only where that fails ``count_nonzero``.

The sum stays torch's (cascade summation, exact enough in float32). A large tensor goes in
chunks, so that the passes after the first read a cache rather than memory; the
chunks' results are added up in float64. NaN and Inf reach the sum (or overflow the sum of
squares), which sends the tensor to the exact slow path of ``stats.py``; min and max are then
not used. ``spread`` is the second pass of the few tensors whose mean is large against their
spread.
"""

from __future__ import annotations

import math

import numpy as np
import torch

Moments = tuple[float, float, float, float, int]  # sum, sum of squares, min, max, non-zero

# Within a shared L3 cache (32 MiB here): the passes after the first read it, not memory.
# Half-MiB pieces (one core's L2) read faster per pass but cost ten numpy calls each: on
# GPT-2-sized activations (1-4 MiB) 4 MiB pieces took 17% less time (bench.monitor_bench's
# tensors, cold caches).
_CHUNK_BYTES = 1 << 22
_ROW = 8192  # values per BLAS dot product: under OpenBLAS's threading threshold (10000)
# float dtype -> its bits as signed and unsigned integers, and the sign bit (unsigned)
_BITS = {
    np.float32: (np.int32, np.uint32, np.uint32(1 << 31)),
    np.float64: (np.int64, np.uint64, np.uint64(1 << 63)),
}
_DTYPES = (torch.float32, torch.float64)


class HostMoments:
    """Computes ``Moments`` of CPU float tensors, reusing its buffers across tensors."""

    def __init__(self) -> None:
        self._is_nonzero = np.empty(0, dtype=np.bool_)
        self._centred = np.empty(0, dtype=np.float32)

    @staticmethod
    def accepts(x: torch.Tensor) -> bool:
        return (
            x.device.type == "cpu"
            and x.layout == torch.strided
            and x.dtype in _DTYPES
            and not x.requires_grad
            and not x.is_neg()
            and not x.is_conj()
        )

    def __call__(self, x: torch.Tensor) -> Moments:
        """Moments of `x` (``accepts(x)``, non-empty; fastest in memory order)."""
        with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN go to the slow path
            return self.unguarded(x)

    def unguarded(self, x: torch.Tensor) -> Moments:
        """`__call__` where numpy's overflow and invalid warnings are ignored already: a
        worker summarising tensor after tensor sets that once (an errstate is ~3 µs)."""
        total = float(x.sum())  # the first read, the whole tensor: torch's cascade sum
        parts = _chunks(x, _CHUNK_BYTES)
        if len(parts) == 1:  # most tensors
            return (total, *self._piece(parts[0]))
        pieces = [self._piece(part) for part in parts]
        return (
            total,
            sum(p[0] for p in pieces),
            min(p[1] for p in pieces),
            max(p[2] for p in pieces),
            sum(p[3] for p in pieces),
        )

    def spread(self, x: torch.Tensor, mean: float) -> float:
        """sqrt(sum((x - mean)**2)), chunk by chunk. The differences are taken from the mean
        rounded to x's dtype (exact for values near it), then corrected by the rounding:
        sum((x - c)**2) = sum((x - mean)**2) + n * (mean - c)**2."""
        a = x.numpy()
        centre = np.asarray(mean, dtype=a.dtype)
        total = 0.0
        for p in _chunks(x, _CHUNK_BYTES):
            if self._centred.size < p.size or self._centred.dtype != p.dtype:
                self._centred = np.empty(max(p.size, self._centred.size), dtype=p.dtype)
            centred = self._centred[: p.size].reshape(p.shape)
            np.subtract(p, centre, out=centred)
            total += _sum_of_squares(centred)
        return math.sqrt(max(total - a.size * (mean - float(centre)) ** 2, 0.0))

    def _piece(self, a: np.ndarray) -> tuple[float, float, float, int]:
        """Sum of squares, min, max and non-zero count of `a`."""
        signed, unsigned, sign = _BITS[a.dtype.type]
        squares = _sum_of_squares(a)
        as_signed = a.view(signed)
        top = as_signed.max()  # bits of the largest value with the sign bit clear
        hi = top if top >= 0 else as_signed.min()  # all negative: the nearest to zero
        as_unsigned = a.view(unsigned)
        bottom = as_unsigned.max()  # bits of the most negative value
        lo = bottom if bottom >= sign else as_unsigned.min()  # none negative: the smallest
        lo_value, hi_value = float(lo.view(a.dtype)), float(hi.view(a.dtype))
        if lo_value > 0 or hi_value < 0:  # one sign throughout (NaN too): no zero
            return squares, lo_value, hi_value, a.size
        return squares, lo_value, hi_value, self._nonzero(a)

    def _nonzero(self, a: np.ndarray) -> int:
        if self._is_nonzero.size < a.size:
            self._is_nonzero = np.empty(a.size, dtype=np.bool_)
        is_nonzero = self._is_nonzero[: a.size].reshape(a.shape)
        np.not_equal(a, 0, out=is_nonzero)
        return a.size if is_nonzero.all() else int(np.count_nonzero(is_nonzero))


def _chunks(x: torch.Tensor, nbytes: int) -> list[np.ndarray]:
    """`x` as an array if strided, else its consecutive flat pieces of `nbytes`: flat
    whatever its shape, so that tensors holding the same values in the same memory order
    (a view of another, shaped otherwise) get the same sums to the last bit, as stats.py
    takes one's for the other."""
    a = x.numpy()
    if not x.is_contiguous():
        return [a]
    flat, step = a.reshape(-1), max(nbytes // a.itemsize, 1)
    if flat.size <= step:
        return [flat]
    return [flat[start : start + step] for start in range(0, flat.size, step)]


def _sum_of_squares(a: np.ndarray) -> float:
    """Sum of the squares of `a`, by BLAS dot products of at most ``_ROW`` values."""
    if a.ndim == 1:
        if a.size <= _ROW:
            return float(np.dot(a, a))
        whole = a.size - a.size % _ROW
        rows = _sum_of_squares(a[:whole].reshape(-1, _ROW))
        tail = a[whole:]
        return rows + float(np.dot(tail, tail)) if tail.size else rows
    if a.ndim == 0 or a.shape[-1] > _ROW:  # long strided rows: no BLAS
        # every axis named: "...,...->" is refused where "..." stands for any axis
        axes = _AXES[: a.ndim]
        return float(np.einsum(f"{axes},{axes}->", a, a, dtype=np.float64))
    if _vecdot is not None:  # numpy >= 2.0
        return float(_vecdot(a, a).sum(dtype=np.float64))
    return math.fsum(float(np.dot(row, row)) for row in a.reshape(-1, a.shape[-1]))


_vecdot = getattr(np, "vecdot", None)
_AXES = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # the 52 axis names einsum takes
