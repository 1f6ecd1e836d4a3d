"""Per-op metric values for the widget's overlays (the "metrics" request), and the sides of
a comparison the inspector plots (the "activation" request's `side`).

Values go to the frontend as one float32 buffer in the order of the op ids sent with it,
never in the graph payload: a metric is computed only when the user picks it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from typing import cast

import torch

from lens_widget.compare.comparison import LogComparison, OpDiff, pair_diff
from lens_widget.log.model_log import ModelLog
from lens_widget.log.nonfinite import nonfinite_reach
from lens_widget.log.records import META_NO_VALUES, OpRecord
from lens_widget.widget import protocol
from lens_widget.widget.gradient_payload import has_gradients

_NAN = math.nan

# Wire name -> the value of one op (NaN where it has none: no formula, not saved, not timed).
_OP_METRICS: dict[str, Callable[[OpRecord], float | None]] = {
    "flops": lambda op: op.flops,
    "time": lambda op: op.time_ms,
    "bytes": lambda op: op.nbytes,
    "params": lambda op: op.param_count,
    "mean": lambda op: op.stats.mean if op.stats else None,
    "std": lambda op: op.stats.std if op.stats else None,
    "absmax": lambda op: op.stats.absmax if op.stats else None,
    "zeroFraction": lambda op: op.stats.zero_fraction if op.stats else None,
    "nonfinite": lambda op: (
        None if op.output_stats is None else float(not all(s.finite for s in op.output_stats))
    ),
}
# Of the whole log at once: 1 where an op's NaN/Inf is masked away later and never reaches
# the output or a gradient (log/nonfinite.py), 0 where it does or where all is finite.
_LOG_METRICS: dict[str, Callable[[ModelLog], list[float | None]]] = {
    "nonfiniteMasked": lambda log: _masked(log),
}
# Of the gradient summed over backward passes; only for a log that kept gradients.
_GRAD_METRICS: dict[str, Callable[[torch.Tensor], float]] = {
    "gradNorm": lambda g: float(torch.linalg.vector_norm(_wide(g))),
    "gradNonfinite": lambda g: float(not bool(torch.isfinite(g).all())),
}
_STATS_METRICS = frozenset(
    {"mean", "std", "absmax", "zeroFraction", "nonfinite", "nonfiniteMasked"}
)
_DIFF_METRICS: dict[str, Callable[[OpDiff], float | None]] = {
    "relL2": lambda d: d.rel_l2,
    "maxAbs": lambda d: d.max_abs,
    "cosine": lambda d: d.cosine,
}
# Of the log's collectives (ModelLog.collectives): the bytes each sent; other ops have none.
_COMM_METRICS = ("commBytes",)
METRICS: tuple[str, ...] = (
    *_OP_METRICS,
    *_LOG_METRICS,
    *_DIFF_METRICS,
    *_GRAD_METRICS,
    *_COMM_METRICS,
)
# What the picker offers besides METRICS, colored by the frontend from the graph payload alone
# (render/deviceOverlay.ts: NodeInfo.device), never asked for: a request for one is a bug.
FRONTEND_OVERLAYS: tuple[str, ...] = ("device",)
# Why a metric has a value for no op at all, where the log says why.
_NO_SAVED = "needs saved activations and this trace kept none: trace with save='all'"
_NONE_REASONS = {
    "time": "no op was timed: trace with timing=True to color by time",
    **{name: f"{name} {_NO_SAVED}" for name in _STATS_METRICS},
}


class MetricError(ValueError):
    """A metric the widget cannot give (unknown name, a difference outside a comparison)."""


def metric_values(
    log: ModelLog, metric: str, diffs: Mapping[str, OpDiff] | None = None
) -> tuple[protocol.MetricsResult, bytes]:
    """Every op's value of `metric`: the result (ids in order) and the float32 LE buffer.
    `diffs` (A's label -> OpDiff) gives the difference metrics of a comparison."""
    ops = log.ops
    if metric in _DIFF_METRICS:
        if diffs is None:
            raise MetricError(f"metric {metric!r} needs a comparison (LensWidget.compare)")
        of_diff = _DIFF_METRICS[metric]
        values = [of_diff(diffs[op.label]) if op.label in diffs else None for op in ops]
    elif metric in _GRAD_METRICS:
        if not has_gradients(log):
            raise MetricError(f"metric {metric!r} needs a log with gradients (trace a backward)")
        of_grad = _GRAD_METRICS[metric]
        grads = [op.grad for op in ops]
        values = [None if g is None else of_grad(g) for g in grads]
    elif metric in _LOG_METRICS:
        values = _LOG_METRICS[metric](log)
    elif metric in _OP_METRICS:
        if metric in _STATS_METRICS:
            OpRecord.compute_stats(ops)  # one batch, not one host copy per op
        of_op = _OP_METRICS[metric]
        values = [of_op(op) for op in ops]
    elif metric in _COMM_METRICS:
        if not log.collectives:
            raise MetricError(
                "no op of this log is a collective: bytes communicated are recorded by a "
                "trace under torch.distributed"
            )
        sent = {label: info.nbytes for label, info in log.collectives.items()}
        values = [sent.get(op.label) for op in ops]
    elif metric in FRONTEND_OVERLAYS:
        raise MetricError(f"{metric!r} is colored by the frontend from the graph: nothing to ask")
    else:
        raise MetricError(f"unknown metric {metric[:60]!r}; there are {', '.join(METRICS)}")
    if ops and all(v is None for v in values) and metric in _NONE_REASONS:
        # not a graph of grey "no value" nodes: why there is none
        if metric in _STATS_METRICS and all(op.device == "meta" for op in ops):
            raise MetricError(f"{metric}: {META_NO_VALUES}")
        raise MetricError(_NONE_REASONS[metric])
    floats = [_NAN if v is None else float(v) for v in values]
    data = struct.pack(f"<{len(floats)}f", *floats)
    name = cast(protocol.MetricName, metric)  # one of METRICS: checked above
    return {"metric": name, "ids": [op.label for op in ops]}, data


def _masked(log: ModelLog) -> list[float | None]:
    reach = nonfinite_reach(log.nodes)
    return [
        None if op.output_stats is None else float(reach.get(op.label) is False) for op in log.ops
    ]


def _wide(t: torch.Tensor) -> torch.Tensor:
    """`t` in double precision (complex in complex128), for a norm that does not overflow."""
    return t.detach().to(torch.complex128 if t.is_complex() else torch.float64)


def side_outputs(
    diffs: Mapping[str, OpDiff],
    label: str,
    side: str,
    comparison: LogComparison | None = None,
) -> tuple[torch.Tensor, ...]:
    """The outputs of A's op `label` on `side` "b" (the matched op of B) or "diff" (A−B).
    A source or output sink (an input, a parameter, `output.logits`), which the comparison
    does not match (it matches ops), is B's node of the same label and kind."""
    diff = diffs.get(label)
    if diff is None and comparison is not None:
        a, b = comparison.a.by_label.get(label), comparison.b.by_label.get(label)
        if a is not None and b is not None and a.kind != "op" and b.kind == a.kind:
            diff = pair_diff(a, b)  # paired as ops are, by label
    if diff is None:
        raise MetricError(f"op {label} ran only in A: there is no B side to show")
    if side == "b":
        if diff.b.activations is None:
            raise MetricError(f"activation of {label} was not saved in B")
        return diff.b.activations
    if diff.reason is not None:
        raise MetricError(f"A−B of {label} cannot be shown: {diff.reason}")
    pairs = zip(diff.a.activations or (), diff.b.activations or (), strict=True)
    return tuple(_difference(x, y) for x, y in pairs)


def _difference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a − b in a common dtype on a's device (bool and integer outputs as float)."""
    if a.is_complex() or b.is_complex():
        return (a - b.to(a.device)).abs()
    return a.detach().double() - b.detach().to(a.device).double()
