"""Reduce one activation tensor to what the frontend plots (protocol.ts `ActivationResult`).

Everything heavy happens here in the kernel: the browser only receives a float32 buffer
small enough to draw (<= 4096 line points, <= 256x256 heatmaps, <= 16 images of <= 64x64),
plus statistics and a histogram computed over the full tensor.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import torch
import torch.nn.functional as F

MAX_LINE = 4096
MAX_HEATMAP = 256
MAX_CHANNELS = 16
MAX_IMAGE = 64
HIST_BINS = 64


def as_float(t: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The tensor as a float tensor on the CPU, and a note when the conversion lost something."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.is_complex():
        return t.abs().float(), "complex shown as magnitude"
    if t.dtype in (torch.float32, torch.float64):
        return t, ""
    if t.dtype == torch.int64:
        return t.double(), ""  # float32 would round large ids and counts in the stats
    # bool, small ints, half, bfloat16, fp8...: float32 holds them exactly enough.
    return t.float(), ""


def _json_number(v: float) -> float:
    if math.isfinite(v):
        return v
    return 0.0 if math.isnan(v) else math.copysign(sys.float_info.max, v)


def stats_and_hist(x: torch.Tensor) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Statistics and a 64-bin histogram over the finite values of the full tensor."""
    numel = x.numel()
    if numel == 0:
        empty = {"numel": 0, "min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0, "zeros": 0.0}
        return {**empty, "nan": 0, "inf": 0}, {"edges": [], "counts": []}
    flat = x.reshape(-1)
    zeros = (numel - int(torch.count_nonzero(flat))) / numel
    # Accumulate in float64: float32 sums drift on large tensors (and overflow to inf).
    f64 = flat.double()
    total = float(f64.sum())
    if math.isfinite(total):  # the common case: no NaN/Inf, skip the masks
        n_nan = n_inf = 0
        finite = f64
    else:
        n_nan = int(torch.isnan(f64).sum())
        n_inf = int(torch.isinf(f64).sum())
        finite = f64[torch.isfinite(f64)]
    if finite.numel() == 0:
        stats = {"numel": numel, "min": 0.0, "max": 0.0, "mean": 0.0, "std": 0.0, "zeros": zeros}
        return {**stats, "nan": n_nan, "inf": n_inf}, {"edges": [], "counts": []}
    lo_t, hi_t = torch.aminmax(finite)
    lo, hi = float(lo_t), float(hi_t)
    n = finite.numel()
    # Values near float64's limit overflow sums and hi - lo: work on them scaled down.
    scale = max(abs(lo), abs(hi))
    scale = scale if scale > 1e150 else 1.0
    scaled = finite / scale if scale != 1.0 else finite
    if n > 1:
        var, mean_t = torch.var_mean(scaled)
        mean, std = float(mean_t) * scale, math.sqrt(float(var)) * scale
    else:
        mean, std = lo, 0.0
    stats = {
        "numel": numel,
        "min": lo,
        "max": hi,
        "mean": _json_number(mean),
        "std": _json_number(std),
        "zeros": zeros,
    }
    if lo == hi:  # one value: a single bar in the middle bin of a unit-wide range
        edges = [lo - 0.5 + i / HIST_BINS for i in range(HIST_BINS + 1)]
        counts = [0] * HIST_BINS
        counts[HIST_BINS // 2] = n
    else:
        s_lo, s_hi = lo / scale, hi / scale
        counts = [int(c) for c in torch.histc(scaled, HIST_BINS, s_lo, s_hi).tolist()]
        step = (s_hi - s_lo) / HIST_BINS
        edges = [(s_lo + i * step) * scale for i in range(HIST_BINS + 1)]
        edges[0], edges[-1] = lo, hi
    hist = {"edges": edges, "counts": counts}
    return {**stats, "nan": n_nan, "inf": n_inf}, hist


def _pool_line(v: torch.Tensor) -> tuple[torch.Tensor, str]:
    n = v.numel()
    if n <= MAX_LINE:
        return v, ""
    pooled = F.adaptive_avg_pool1d(v.reshape(1, 1, n).float(), MAX_LINE).reshape(-1)
    return pooled, f"points {n} -> {MAX_LINE} (mean of ~{n / MAX_LINE:.3g})"


def _pool_2d(m: torch.Tensor, limit: int) -> tuple[torch.Tensor, str]:
    rows, cols = m.shape[-2], m.shape[-1]
    out_r, out_c = min(rows, limit), min(cols, limit)
    if (out_r, out_c) == (rows, cols):
        return m, ""
    pooled = F.adaptive_avg_pool2d(m.reshape(-1, 1, rows, cols).float(), (out_r, out_c))
    pooled = pooled.reshape(*m.shape[:-2], out_r, out_c)
    parts = []
    if out_r != rows:
        parts.append(f"rows {rows} -> {out_r} (mean of ~{rows / out_r:.3g})")
    if out_c != cols:
        parts.append(f"cols {cols} -> {out_c} (mean of ~{cols / out_c:.3g})")
    return pooled, ", ".join(parts)


def _batch_note(index: int, size: int) -> str:
    return f"showing batch item {index + 1} of {size}" if size > 1 else ""


def plot_kind(shape: tuple[int, ...]) -> str:
    """Which plot suits a tensor of this shape (see `tensor_view` for the layout of each)."""
    rank = len(shape)
    if rank == 0 or math.prod(shape) == 1:
        return "scalar"
    if rank == 1:
        return "line"
    if rank == 2:
        return "line" if min(shape) == 1 else "heatmap"
    if rank == 4 and shape[2] > 1 and shape[3] > 1:
        return "images"
    if rank == 4:
        # (N, C, 1, W) and friends: drop the singleton spatial dims, plot as (N, C*H*W).
        return plot_kind((shape[0], math.prod(shape[1:])))
    return "sequence"


def check_index(name: str, value: Any, size: int) -> int:
    """An int in [0, size), or ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not 0 <= value < size:
        raise ValueError(f"{name} {value} out of range [0, {size})")
    return value


def tensor_view(
    tensor: torch.Tensor,
    *,
    node_id: str = "",
    output: int = 0,
    n_outputs: int = 1,
    batch: int = 0,
    channel_start: int = 0,
) -> tuple[dict[str, Any], bytes]:
    """The ActivationResult dict for `tensor` and the float32 little-endian bytes of its data.

    Raises ValueError for a batch or channel index out of range.
    """
    x, conv_note = as_float(tensor)
    shape = tuple(int(s) for s in x.shape)
    stats, hist = stats_and_hist(x)
    kind = plot_kind(shape) if x.numel() else "line"
    # What was cut or pooled before sending; `reduced` is true exactly when this is non-empty.
    notes: list[str] = []
    batch_info: dict[str, int] | None = None
    channels: dict[str, int] | None = None

    if x.numel() == 0:
        data = x.reshape(0)
    elif kind == "scalar":
        data = x.reshape(1)
    elif kind == "line":
        data, note = _pool_line(x.reshape(-1))
        notes.append(note)
    elif kind == "heatmap":
        data, note = _pool_2d(x.reshape(shape[0], -1), MAX_HEATMAP)
        notes.append(note)
    elif kind == "images":
        n, c = shape[0], shape[1]
        batch = check_index("batch", batch, n)
        channel_start = check_index("channelStart", channel_start, c)
        count = min(MAX_CHANNELS, c - channel_start)
        window = x[batch, channel_start : channel_start + count]
        data, note = _pool_2d(window, MAX_IMAGE)
        notes.append(_batch_note(batch, n))
        if count < c:
            notes.append(f"channels {channel_start}..{channel_start + count - 1} of {c}")
        notes.append(note)
        batch_info = {"index": batch, "size": n}
        channels = {"start": channel_start, "count": count, "total": c}
    else:  # sequence: (B, T, F...) -> one batch item as tokens x features
        batch = check_index("batch", batch, shape[0])
        item = x[batch].reshape(shape[1], -1) if len(shape) > 2 else x[batch].reshape(1, -1)
        notes.append(_batch_note(batch, shape[0]))
        if len(shape) > 3:
            notes.append(f"dims {'x'.join(map(str, shape[2:]))} flattened")
        data, note = _pool_2d(item, MAX_HEATMAP)
        notes.append(note)
        batch_info = {"index": batch, "size": shape[0]}

    reductions = [n for n in notes if n]
    note = "; ".join([conv_note, *reductions] if conv_note else reductions)
    buf = data.to(torch.float32).contiguous().numpy().astype("<f4", copy=False).tobytes()
    result = {
        "id": node_id,
        "output": output,
        "nOutputs": n_outputs,
        "shape": list(shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "plot": kind,
        "dataShape": list(data.shape) if data.dim() else [1],
        "reduced": bool(reductions),
        "note": note,
        "stats": stats,
        "hist": hist,
        "batch": batch_info,
        "channels": channels,
    }
    return result, buf
