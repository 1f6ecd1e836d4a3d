"""The activation views a standalone HTML page carries, pooled to fit its byte budget.

Each saved tensor output gets the view the inspector asks for first (batch item 0, the first
channels), made by the kernel's own `tensor_view`, so the page plots exactly what the notebook
would. When they do not all fit, the large views are mean-pooled further, all to one common
cap (every op keeps a smaller plot; statistics and histogram stay those of the full tensor);
only when even views of MIN_VALUES values do not fit are views left out: constants first,
then the largest. Views with the same values (a reshape, a dropout in eval mode, ...) share
them in the page. Parameters and buffers get views only when asked (`weights=True`): their
statistics read every weight, most of the time a page takes to write.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from lens_widget.log.model_log import ModelLog
from lens_widget.widget import protocol
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.tensor_view import tensor_view

# The smallest a pooled view gets (a 16x16 heatmap, a 256-point line).
MIN_VALUES = 256
# Bytes a float32 value costs in the page at most (base64 of its 4 bytes; gzip only helps).
VALUE_BYTES = 4 * 4 / 3
# Views are pooled to this many times the budget's even share as they are made, so the
# views waiting for the final cap take a bounded amount of memory.
_HEADROOM = 4
_WEIGHTS = frozenset({"param", "buffer"})
# Sources come after ops, inputs and outputs when views have to be left out.
_SOURCES = _WEIGHTS | {"const"}


@dataclass(frozen=True)
class PageView:
    """One output's view: its ActivationResult and its float32 values (dataShape)."""

    result: protocol.ActivationResult
    values: torch.Tensor
    is_source: bool
    digest: bytes  # of the values as made: views with one digest share their values

    def result_json(self) -> bytes:
        return json.dumps(self.result, separators=(",", ":")).encode()

    def pooled(self, cap: int, done: dict[bytes, torch.Tensor]) -> PageView:
        """This view mean-pooled to at most `cap` values, saying so in its note; values with
        this view's digest found in `done` are reused (and put there when pooled here)."""
        result = self.result
        shape = result["dataShape"]
        new = _pooled_shape(shape, result["plot"], cap)
        if new == shape:
            return self
        values = done.get(self.digest)
        if values is None:
            if len(shape) == 1:
                values = F.adaptive_avg_pool1d(self.values.reshape(1, -1), new[0])
            else:
                flat = self.values.reshape(-1, shape[-2], shape[-1])
                values = F.adaptive_avg_pool2d(flat, (new[-2], new[-1]))
            values = done[self.digest] = values.reshape(new).contiguous()
        how = (
            f"points {shape[0]} -> {new[0]}"
            if len(shape) == 1
            else (f"{shape[-2]}x{shape[-1]} -> {new[-2]}x{new[-1]}")
        )
        note = f"pooled to fit this page: {how}"
        pooled: protocol.ActivationResult = {
            **result,
            "dataShape": new,
            "reduced": True,
            "note": f"{result['note']}; {note}" if result["note"] else note,
        }
        return PageView(pooled, values, self.is_source, self.digest)


@dataclass
class PageViews:
    """Every view made for a page, and the ones it carries after fitting a budget."""

    made: list[PageView]
    total: int  # saved tensor outputs of the log
    no_weights: list[str]  # parameters and buffers left without a view (weights=False)
    views: list[PageView] = field(default_factory=list)
    cap: int | None = None  # values per view after pooling; None when nothing was pooled

    @property
    def complete(self) -> bool:
        """Every view made is carried, unpooled: a larger budget would change nothing."""
        return len(self.views) == len(self.made) and self.cap is None

    def fit(self, budget: float) -> None:
        """Choose and pool the views (from those made) to fit `budget` bytes of the page."""
        kept = _keep_within(self.made, budget)
        cap = _water_level(kept, budget - sum(_result_costs(kept))) if kept else None
        if cap is not None and any(v.values.numel() > cap for v in kept):
            done: dict[bytes, torch.Tensor] = {}
            self.views, self.cap = [v.pooled(cap, done) for v in kept], cap
        else:
            self.views, self.cap = kept, None


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


def _tensor_outputs(log: ModelLog) -> Iterator[tuple[str, str, int, int, torch.Tensor]]:
    for record in log.nodes:
        outputs = record.activations
        if outputs is None:
            continue
        for i, t in enumerate(outputs):
            if isinstance(t, torch.Tensor):
                yield record.label, record.kind, i, len(outputs), t


def _unique(views: list[PageView]) -> list[PageView]:
    """One view per set of shared values."""
    return list({v.digest: v for v in views}.values())


def _total_bytes(views: list[PageView], cap: int) -> float:
    return sum(
        math.prod(_pooled_shape(v.result["dataShape"], v.result["plot"], cap)) * VALUE_BYTES
        for v in _unique(views)
    )


def _water_level(views: list[PageView], budget: float) -> int | None:
    """The largest cap (>= MIN_VALUES) at which every view fits in `budget`; None if none."""
    lo, hi = MIN_VALUES, max([MIN_VALUES, *(v.values.numel() for v in views)])
    if _total_bytes(views, lo) > budget:
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _total_bytes(views, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def page_views(log: ModelLog, budget: float, *, weights: bool = False) -> PageViews:
    """The views of `log`'s saved outputs, fitted to `budget` bytes of the page; parameters
    and buffers only with `weights`."""
    outputs = list(_tensor_outputs(log))
    no_weights = [] if weights else sorted({o[0] for o in outputs if o[1] in _WEIGHTS})
    if not weights:
        outputs = [o for o in outputs if o[1] not in _WEIGHTS]
    share = budget / max(1, len(outputs)) / VALUE_BYTES
    first_cap = max(MIN_VALUES, int(_HEADROOM * share))
    made: list[PageView] = []
    shared: dict[bytes, torch.Tensor] = {}
    dim_names = DimNames(log.nodes)  # the axes read as in the notebook
    for label, kind, index, n_outputs, tensor in outputs:
        result, data = tensor_view(
            tensor, node_id=label, output=index, n_outputs=n_outputs,
            dim_names=dim_names.of(label, index),
        )  # fmt: skip
        values = torch.frombuffer(bytearray(data), dtype=torch.float32) if data else torch.zeros(0)
        rounded: protocol.ActivationResult = _rounded(result)  # pyright: ignore[reportAssignmentType]  # _rounded keeps the keys of an ActivationResult
        digest = hashlib.blake2b(data + str(result["dataShape"]).encode(), digest_size=16)
        values = values.reshape(result["dataShape"])
        view = PageView(rounded, values, kind in _SOURCES, digest.digest())
        made.append(view.pooled(first_cap, shared))
    page = PageViews(made, len(outputs) + len(no_weights), no_weights)
    page.fit(budget)
    return page


def _result_costs(views: list[PageView]) -> list[float]:
    """Bytes each view's result takes in the page (gzipped JSON, base64), estimated from the
    compression ratio of all of them together."""
    texts = [v.result_json() for v in views]
    raw = sum(len(t) for t in texts)
    if raw == 0:
        return [0.0] * len(views)
    ratio = len(gzip.compress(b",".join(texts), compresslevel=6)) * 4 / 3 / raw
    return [len(t) * ratio for t in texts]


def _keep_within(views: list[PageView], budget: float) -> list[PageView]:
    """All views if each fits at MIN_VALUES; else the ops' views that fit, smallest first,
    and the constants' only once every op's is in. Shared values are paid for once."""
    result_costs = _result_costs(views)

    def least(v: PageView) -> float:
        shape = _pooled_shape(v.result["dataShape"], v.result["plot"], MIN_VALUES)
        return math.prod(shape) * VALUE_BYTES

    if sum(result_costs) + sum(least(v) for v in _unique(views)) <= budget:
        return views
    order = sorted(range(len(views)), key=lambda i: (views[i].is_source, least(views[i])))
    keep: set[int] = set()
    paid: set[bytes] = set()
    spent = 0.0
    for i in order:
        v = views[i]
        cost = result_costs[i] + (0.0 if v.digest in paid else least(v))
        if spent + cost > budget:
            break  # the rest cost more, or are sources while an op is left out
        keep.add(i)
        paid.add(v.digest)
        spent += cost
    return [v for i, v in enumerate(views) if i in keep]
