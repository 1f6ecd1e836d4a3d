"""The activation views a standalone HTML page carries, pooled to fit its byte budget.

Each saved tensor output gets the view the inspector asks for first (batch item 0, the first
channels), made by the kernel's own `tensor_view`, so the page plots exactly what the notebook
would. When they do not all fit, the large views are mean-pooled further, all to one common
cap (every op keeps a smaller plot; statistics and histogram stay those of the full tensor);
only when even views of MIN_VALUES values do not fit are views left out: parameters,
buffers and constants first, then the largest.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lens_widget.log.model_log import ModelLog
from lens_widget.widget import protocol
from lens_widget.widget.tensor_view import tensor_view

# The smallest a pooled view gets (a 16x16 heatmap, a 256-point line).
MIN_VALUES = 256
# Bytes a float32 value costs in the page (base64 of its 4 bytes).
VALUE_BYTES = 4 * 4 / 3
# Views are pooled to this many times the budget's even share as they are made, so the
# views waiting for the final cap take a bounded amount of memory.
_HEADROOM = 4
# Sources come after ops, inputs and outputs when views have to be left out.
_SOURCES = frozenset({"param", "buffer", "const"})


@dataclass
class PageView:
    """One output's view: its ActivationResult and its float32 values (dataShape)."""

    result: protocol.ActivationResult
    values: torch.Tensor
    is_source: bool

    def result_json(self) -> bytes:
        return json.dumps(self.result, separators=(",", ":")).encode()


@dataclass
class PageViews:
    """What the page carries: the kept views, and how many outputs had a view at all."""

    views: list[PageView]
    total: int  # saved tensor outputs of the log
    cap: int | None  # values per view after pooling; None when nothing was pooled

    def fit(self, budget: float) -> None:
        """Leave out and pool views (in place, only ever further) to fit `budget` bytes."""
        self.views = _keep_within(self.views, budget)
        value_budget = budget - sum(_result_costs(self.views))
        cap = _water_level(self.views, value_budget) if self.views else None
        if cap is not None and any(v.values.numel() > cap for v in self.views):
            for v in self.views:
                _pool(v, cap)
            self.cap = cap if self.cap is None else min(cap, self.cap)


def _rounded(value: object) -> object:
    """Floats to float32's 7 significant digits (halves the JSON), recursively."""
    if isinstance(value, float):
        return float(f"{value:.7g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _pooled_shape(shape: list[int], plot: str, cap: int) -> list[int]:
    """The dataShape a view of `shape` has after pooling it to at most `cap` values."""
    n = math.prod(shape)
    if n <= cap or plot == "scalar":
        return list(shape)
    if len(shape) == 1:
        return [cap]
    # heatmap, sequence [rows, cols]; images [channels, h, w]: keep channels, pool h and w
    *keep, rows, cols = shape
    room = max(1, cap // math.prod(keep))
    f = math.sqrt(room / (rows * cols))
    r = min(rows, max(1, math.floor(rows * f)))
    c = min(cols, max(1, room // r))
    return [*keep, r, c]


def _pool(view: PageView, cap: int) -> None:
    """Mean-pool `view` in place to at most `cap` values, saying so in its note."""
    result = view.result
    shape = result["dataShape"]
    new = _pooled_shape(shape, result["plot"], cap)
    if new == shape:
        return
    x = view.values
    if len(shape) == 1:
        pooled = F.adaptive_avg_pool1d(x.reshape(1, -1), new[0]).reshape(new)
        how = f"points {shape[0]} -> {new[0]}"
    else:
        flat = x.reshape(-1, shape[-2], shape[-1])
        pooled = F.adaptive_avg_pool2d(flat, (new[-2], new[-1])).reshape(new)
        how = f"{shape[-2]}x{shape[-1]} -> {new[-2]}x{new[-1]}"
    view.values = pooled.contiguous()
    result["dataShape"] = new
    result["reduced"] = True
    note = f"pooled to fit this page: {how}"
    result["note"] = f"{result['note']}; {note}" if result["note"] else note


def _tensor_outputs(log: ModelLog) -> Iterator[tuple[str, bool, int, int, torch.Tensor]]:
    for record in log.nodes:
        outputs = record.activations
        if outputs is None:
            continue
        for i, t in enumerate(outputs):
            if isinstance(t, torch.Tensor):
                yield record.label, record.kind in _SOURCES, i, len(outputs), t


def _total_bytes(views: list[PageView], cap: int) -> float:
    return sum(
        math.prod(_pooled_shape(v.result["dataShape"], v.result["plot"], cap)) * VALUE_BYTES
        for v in views
    )


def _water_level(views: list[PageView], budget: float) -> int | None:
    """The largest cap (>= MIN_VALUES) at which every view fits in `budget`; None if none."""
    lo, hi = MIN_VALUES, max(MIN_VALUES, *(v.values.numel() for v in views))
    if _total_bytes(views, lo) > budget:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _total_bytes(views, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def page_views(log: ModelLog, budget: float) -> PageViews:
    """The views of `log`'s saved outputs that fit in `budget` bytes of the page."""
    outputs = list(_tensor_outputs(log))
    share = budget / max(1, len(outputs)) / VALUE_BYTES
    first_cap = max(MIN_VALUES, int(_HEADROOM * share))
    views: list[PageView] = []
    for label, is_source, index, n_outputs, tensor in outputs:
        result, data = tensor_view(tensor, node_id=label, output=index, n_outputs=n_outputs)
        values = torch.frombuffer(bytearray(data), dtype=torch.float32) if data else torch.zeros(0)
        rounded: protocol.ActivationResult = _rounded(result)  # type: ignore[assignment]
        view = PageView(rounded, values.reshape(result["dataShape"]), is_source)
        _pool(view, first_cap)
        views.append(view)
    page = PageViews(views, len(outputs), None)
    page.fit(budget)
    return page


def _result_costs(views: list[PageView]) -> list[float]:
    """Bytes each view's result takes in the page (gzipped JSON, base64), estimated from the
    compression ratio of all of them together."""
    texts = [v.result_json() for v in views]
    raw = sum(len(t) for t in texts)
    if raw == 0:
        return []
    ratio = len(gzip.compress(b",".join(texts), compresslevel=6)) * 4 / 3 / raw
    return [len(t) * ratio for t in texts]


def _keep_within(views: list[PageView], budget: float) -> list[PageView]:
    """All views if each fits at MIN_VALUES; else the ops' views that fit, smallest first,
    and the sources' (parameters, buffers, constants) only once every op's is in."""
    result_costs = _result_costs(views)
    costs = [
        result_costs[i]
        + math.prod(_pooled_shape(v.result["dataShape"], v.result["plot"], MIN_VALUES))
        * VALUE_BYTES
        for i, v in enumerate(views)
    ]
    if sum(costs) <= budget:
        return views
    order = sorted(range(len(views)), key=lambda i: (views[i].is_source, costs[i]))
    keep: set[int] = set()
    spent = 0.0
    for i in order:
        if spent + costs[i] > budget:
            break  # the rest cost more, or are sources while an op is left out
        keep.add(i)
        spent += costs[i]
    return [v for i, v in enumerate(views) if i in keep]
