"""Reduce one activation tensor to what the frontend plots (protocol.ts `ActivationResult`).

Everything heavy happens here in the kernel, on the tensor's own device: the browser only
receives a float32 buffer small enough to draw (<= 4096 line points, <= 256x256 heatmaps,
<= 16 images of <= 64x64), plus statistics and a histogram computed over the full tensor.
A click must not cost a copy of the tensor: the plotted window is cut out and pooled first
(in the tensor's own dtype where torch can pool it), only that small result is converted to
float32 and copied to the host, and the statistics read the tensor in bounded chunks.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F

from lens_widget.widget import protocol
from lens_widget.widget.checks import check_index

MAX_LINE = 4096
MAX_HEATMAP = 256
MAX_CHANNELS = 16
MAX_IMAGE = 64
HIST_BINS = 64
# Elements converted (to float64 for statistics, to float32 for pooling) at a time: 1 MiB.
CHUNK = 1 << 17

# dtypes torch pools as they are; others (ints, bool, complex, fp8) are converted piecewise.
_POOLABLE = frozenset({torch.float16, torch.bfloat16, torch.float32, torch.float64})


def _float32(t: torch.Tensor) -> torch.Tensor:
    """A small tensor as float32: complex as magnitude, bool and ints as numbers."""
    return (t.abs() if t.is_complex() else t).float()


def _stats_device(device: torch.device) -> torch.device:
    # Apple's MPS has no float64: its (bounded) chunks are summed on the CPU instead.
    return torch.device("cpu") if device.type == "mps" else device


def _float64(t: torch.Tensor) -> torch.Tensor:
    # int64 needs float64: float32 would round large ids and counts in the stats.
    t = t.abs() if t.is_complex() else t
    return t.to(_stats_device(t.device), torch.float64)


def _flat_chunks(x: torch.Tensor) -> Iterator[torch.Tensor]:
    """The values of `x` as 1-D pieces of about CHUNK elements; no piece copies more."""
    if x.is_contiguous():
        flat = x.view(-1)
        for start in range(0, flat.numel(), CHUNK):
            yield flat[start : start + CHUNK]
        return
    row = x[0].numel()  # non-contiguous tensors have at least one dimension
    if row >= CHUNK:
        for i in range(x.shape[0]):
            yield from _flat_chunks(x[i])
        return
    step = max(1, CHUNK // max(row, 1))
    for start in range(0, x.shape[0], step):
        yield x[start : start + step].reshape(-1)


def _json_number(v: float) -> float:
    if math.isfinite(v):
        return v
    return 0.0 if math.isnan(v) else math.copysign(sys.float_info.max, v)


def _no_values(
    numel: int, zeros: float | None, n_nan: int, n_inf: int
) -> tuple[protocol.ActivationStats, protocol.Histogram]:
    """Stats with no finite value to describe: null, never an invented 0 (the panel says why)."""
    stats: protocol.ActivationStats = {
        "numel": numel, "min": None, "max": None, "mean": None, "std": None, "zeros": zeros,
        "nan": n_nan, "inf": n_inf,
    }  # fmt: skip
    return stats, {"edges": [], "counts": []}


def stats_and_hist(x: torch.Tensor) -> tuple[protocol.ActivationStats, protocol.Histogram]:
    """Statistics and a 64-bin histogram over the finite values of the full tensor (min, max,
    mean and std None where there is none: an empty or all-NaN tensor).

    Two passes over float64 chunks (float32 sums drift on large tensors and overflow to inf):
    counts and range first, then mean, variance (chunks merged as Chan et al.) and histogram.
    """
    numel = x.numel()
    if numel == 0:  # not even a share of zeros: 0 of 0 values is no share
        return _no_values(0, None, 0, 0)
    n_zero = n_nan = n_inf = 0
    lo, hi = math.inf, -math.inf
    for chunk in _flat_chunks(x):
        values = _float64(chunk)
        n_zero += values.numel() - int(torch.count_nonzero(values))
        if not math.isfinite(float(values.sum())):  # the common case skips the masks
            finite = torch.isfinite(values)
            chunk_nan = int(torch.isnan(values).sum())
            n_nan += chunk_nan
            n_inf += values.numel() - int(finite.sum()) - chunk_nan
            values = values[finite]
        if values.numel():
            chunk_lo, chunk_hi = torch.aminmax(values)
            lo, hi = min(lo, float(chunk_lo)), max(hi, float(chunk_hi))
    zeros = n_zero / numel
    n = numel - n_nan - n_inf
    if n == 0:
        return _no_values(numel, zeros, n_nan, n_inf)
    # Values near float64's limit overflow sums and hi - lo: work on them scaled down.
    scale = max(abs(lo), abs(hi))
    scale = scale if scale > 1e150 else 1.0
    s_lo, s_hi = lo / scale, hi / scale
    counts_t = torch.zeros(HIST_BINS, dtype=torch.float64, device=_stats_device(x.device))
    seen, mean, m2 = 0, 0.0, 0.0
    for chunk in _flat_chunks(x):
        values = _float64(chunk)
        if n_nan or n_inf:
            values = values[torch.isfinite(values)]
        if scale != 1.0:
            values = values / scale
        k = values.numel()
        if k == 0:
            continue
        var_t, mean_t = torch.var_mean(values, correction=0)
        chunk_mean, total = float(mean_t), seen + k
        delta = chunk_mean - mean
        mean += delta * k / total
        m2 += float(var_t) * k + delta * delta * seen * k / total
        seen = total
        if lo != hi:
            counts_t += torch.histc(values, HIST_BINS, s_lo, s_hi)
    std = math.sqrt(m2 / (n - 1)) * scale if n > 1 else 0.0
    stats: protocol.ActivationStats = {
        "numel": numel,
        "min": lo,
        "max": hi,
        "mean": _json_number(mean * scale if n > 1 else lo),
        "std": _json_number(std),
        "zeros": zeros,
        "nan": n_nan,
        "inf": n_inf,
    }
    if lo == hi:  # one value: a single bar in the middle bin of a unit-wide range
        edges = [lo - 0.5 + i / HIST_BINS for i in range(HIST_BINS + 1)]
        counts = [0] * HIST_BINS
        counts[HIST_BINS // 2] = n
    else:
        counts = [int(c) for c in counts_t.tolist()]
        step = (s_hi - s_lo) / HIST_BINS
        edges = [(s_lo + i * step) * scale for i in range(HIST_BINS + 1)]
        edges[0], edges[-1] = lo, hi
    return stats, {"edges": edges, "counts": counts}


def _pool(x: torch.Tensor, size: tuple[int, ...]) -> torch.Tensor:
    """torch's adaptive mean pooling of the last len(size) dims of `x`."""
    k = len(size)
    flat = x.reshape(-1, *x.shape[-k:])  # pooling takes (N, L) or (N, H, W)
    if k == 1:
        pooled = F.adaptive_avg_pool1d(flat, size)
    else:
        pooled = F.adaptive_avg_pool2d(flat, (size[0], size[1]))
    return pooled.reshape(*x.shape[:-k], *size)


def _mean_pool(x: torch.Tensor, size: tuple[int, ...]) -> torch.Tensor:
    """Adaptive mean pooling of the last len(size) dims (1 or 2), as float32.

    Small inputs are converted first; large float ones pool in their own dtype; large others
    (ints, bool, complex) are converted one window of output rows at a time, never whole.
    """
    if x.numel() <= CHUNK:
        return _pool(_float32(x), size)
    if x.dtype in _POOLABLE:
        return _pool(x, size).float()
    dim = x.dim() - len(size)  # the dim whose windows become output rows
    rows, out_rows = x.shape[dim], size[0]
    pieces = []
    for i in range(out_rows):
        start, end = (i * rows) // out_rows, -(-(i + 1) * rows // out_rows)
        window = _float32(x.narrow(dim, start, end - start)).mean(dim, keepdim=True)
        pieces.append(_pool(window, (1, *size[1:])) if len(size) == 2 else window)
    return torch.cat(pieces, dim)


def _pool_line(v: torch.Tensor) -> tuple[torch.Tensor, str]:
    n = v.numel()
    if n <= MAX_LINE:
        return v, ""
    pooled = _mean_pool(v, (MAX_LINE,))
    return pooled, f"points {n} -> {MAX_LINE} (mean of ~{n / MAX_LINE:.3g})"


def pool_2d(
    m: torch.Tensor, limit: int, names: tuple[str, str] = ("rows", "cols")
) -> tuple[torch.Tensor, str]:
    """Mean-pools the last two dims to at most `limit` each; the note names them."""
    rows, cols = m.shape[-2], m.shape[-1]
    out_r, out_c = min(rows, limit), min(cols, limit)
    if (out_r, out_c) == (rows, cols):
        return m, ""
    pooled = _mean_pool(m, (out_r, out_c))
    parts = []
    if out_r != rows:
        parts.append(f"{names[0]} {rows} -> {out_r} (mean of ~{rows / out_r:.3g})")
    if out_c != cols:
        parts.append(f"{names[1]} {cols} -> {out_c} (mean of ~{cols / out_c:.3g})")
    return pooled, ", ".join(parts)


def index_caption(name: str, index: int, size: int) -> str:
    """ "batch 1 of 4": the one way a picked index is written, here and in the frontend.

    Indices count from 0, as in torch, so the caption names the same item as `x[1]`.
    """
    return f"{name} {index} of {size}"


def _joined(names: Sequence[str], shape: Sequence[int]) -> str:
    """The name of dims flattened into one ("channel×height×width"); size-1 dims drop out."""
    kept = [n for n, s in zip(names, shape, strict=True) if s != 1]
    return "×".join(kept) or "×".join(names)


# What the image grid and the batch slider assume of dims nothing else names.
_KIND_DIMS: dict[str, tuple[str, ...]] = {
    "images": ("batch", "channel"),
    "sequence": ("batch",),
}


def _name_dims(given: Sequence[str], kind: protocol.PlotKind) -> list[str]:
    defaults = _KIND_DIMS.get(kind, ())
    return [
        name or (defaults[i] if i < len(defaults) else f"dim {i}") for i, name in enumerate(given)
    ]


def _or(axis: str, unnamed: str) -> str:
    return unnamed if axis.startswith("dim ") else axis


def plot_axes(kind: protocol.PlotKind, dims: Sequence[str], shape: Sequence[int]) -> list[str]:
    """What each dim of the plotted data (`dataShape`) is, from the names of the tensor's dims."""
    if kind == "scalar":
        return ["value"]
    if kind == "line":
        return [_joined(dims, shape) if len(dims) > 1 else (dims[0] if dims else "index")]
    if kind == "heatmap":
        return [dims[0], _joined(dims[1:], shape[1:])]
    if kind == "images":
        return [dims[1], dims[2], dims[3]]
    return [dims[1], _joined(dims[2:], shape[2:])]  # sequence: one batch item


def plot_kind(shape: tuple[int, ...]) -> protocol.PlotKind:
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


def named_plot_kind(shape: tuple[int, ...], dims: Sequence[str]) -> protocol.PlotKind:
    """`plot_kind`, unless the dims say better: a (batch, token, head, feature) tensor (an
    attention op's output before its heads are merged) is a token x (head·feature) heatmap
    per batch item, not a grid of one sliver per token."""
    kind = plot_kind(shape)
    if kind == "images" and len(dims) == 4 and dims[1] == "token":
        return "sequence"
    return kind


def tensor_view(
    tensor: torch.Tensor,
    *,
    node_id: str = "",
    output: int = 0,
    n_outputs: int = 1,
    batch: int = 0,
    channel_start: int = 0,
    dim_names: Sequence[str] = (),
) -> tuple[protocol.ActivationResult, bytes]:
    """The ActivationResult dict for `tensor` and the float32 little-endian bytes of its data.

    `dim_names` says what each dim is ("batch", "token", ...; "" or missing: "dim i").
    Raises ValueError for a batch or channel index out of range.
    """
    x = tensor.detach()
    conv_note = "complex shown as magnitude" if x.is_complex() else ""
    if x.layout != torch.strided:
        # a sparse gradient (Embedding(sparse=True)) or input: plotted as its dense values
        layout = str(x.layout).removeprefix("torch.")
        conv_note = "; ".join(filter(None, (f"{layout} shown dense", conv_note)))
        x = x.to_dense()
    shape: tuple[int, ...] = tuple(int(s) for s in x.shape)
    stats, hist = stats_and_hist(x)
    given = list(dim_names) if len(dim_names) == len(shape) else [""] * len(shape)
    kind = named_plot_kind(shape, given) if x.numel() else "line"
    dims = _name_dims(given, kind)
    axes = plot_axes(kind, dims, shape) if x.numel() else ["index"]
    # Pooling notes say "rows"/"cols" where a dim has no name of its own.
    pooled = (_or(axes[0], "rows"), _or(axes[-1], "cols"))
    # What was cut or pooled before sending; `reduced` is true exactly when this is non-empty.
    notes: list[str] = []
    batch_info: protocol.BatchWindow | None = None
    channels: protocol.ChannelWindow | None = None

    if x.numel() == 0:
        data = x.reshape(0)
    elif kind == "scalar":
        data = x.reshape(1)
    elif kind == "line":
        data, note = _pool_line(x.reshape(-1))
        notes.append(note)
    elif kind == "heatmap":
        data, note = pool_2d(x.reshape(shape[0], -1), MAX_HEATMAP, pooled)
        notes.append(note)
    elif kind == "images":
        n, c = shape[0], shape[1]
        batch = check_index("batch", batch, n)
        channel_start = check_index("channelStart", channel_start, c)
        count = min(MAX_CHANNELS, c - channel_start)
        window = x[batch, channel_start : channel_start + count]
        data, note = pool_2d(window, MAX_IMAGE, (_or(axes[1], "rows"), pooled[1]))
        if n > 1:
            notes.append(index_caption(dims[0], batch, n))
        if count < c:
            notes.append(f"{dims[1]}s {channel_start}..{channel_start + count - 1} of {c}")
        notes.append(note)
        batch_info = {"index": batch, "size": n}
        channels = {"start": channel_start, "count": count, "total": c}
    else:  # sequence: (B, T, F...) -> one batch item as tokens x features
        batch = check_index("batch", batch, shape[0])
        tokens = shape[1] if x.dim() > 2 else 1
        item = x[batch].reshape(tokens, -1)
        if shape[0] > 1:
            notes.append(index_caption(dims[0], batch, shape[0]))
        if x.dim() > 3:
            notes.append(f"dims {'x'.join(map(str, shape[2:]))} flattened")
        data, note = pool_2d(item, MAX_HEATMAP, pooled)
        notes.append(note)
        batch_info = {"index": batch, "size": shape[0]}

    reductions = [n for n in notes if n]
    note = "; ".join([conv_note, *reductions] if conv_note else reductions)
    # Only the reduced view leaves the device.
    values = _float32(data).cpu().contiguous()
    buf = values.numpy().astype("<f4", copy=False).tobytes()
    result: protocol.ActivationResult = {
        "id": node_id,
        "output": output,
        "nOutputs": n_outputs,
        "shape": list(shape),
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "plot": kind,
        "dims": dims,
        "axes": axes,
        "dataShape": list(data.shape) if data.dim() else [1],
        "reduced": bool(reductions),
        "note": note,
        "stats": stats,
        "hist": hist,
        "batch": batch_info,
        "channels": channels,
    }
    return result, buf
