"""The monitor view's requests (a widget of ``LensWidget.from_monitor``): one step's column
of one statistic ("monitorStep"), one op's statistics over the steps ("monitorSeries").

Only what is shown travels: one float32 value per op of one step, or one op's rows, as
binary buffers. A step's op ids are sent once per op index (`opsKey`): steps whose graph is
the same share theirs (log/monitor/step_history.py), so moving the slider sends numbers only.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from lens_widget.log.model_log import ModelLog
from lens_widget.log.monitor.step_history import SIDES, STAT_NAMES, OpIndex, StepHistory, StepStats
from lens_widget.widget import protocol
from lens_widget.widget.checks import cut, quote, require_int
from lens_widget.widget.requests import Answer, RequestError, request_params

MODES = ("value", "change")
DEFAULT_TOP = 20
MAX_TOP = 500
# |v| below this counts as zero in a relative change (the change is then absolute)
_TINY = 1e-12
_NAN, _INF = STAT_NAMES.index("nan"), STAT_NAMES.index("inf")


class MonitorSource:
    """A StepHistory as the widget reads it: lookups cached per op index."""

    def __init__(self, history: StepHistory) -> None:
        self.history = history
        # id(OpIndex) -> (the index, kept alive so its id is not reused; label -> row)
        self._rows: dict[int, tuple[OpIndex, dict[str, int]]] = {}
        self._keys: dict[int, int] = {}  # id(OpIndex) -> its opsKey (first step using it)
        self._nonfinite: dict[int, bool] = {}  # step -> some op's output or gradient non-finite

    def rows(self, ops: OpIndex) -> dict[str, int]:
        hit = self._rows.get(id(ops))
        if hit is None or hit[0] is not ops:
            hit = self._rows[id(ops)] = (ops, {label: i for i, label in enumerate(ops.labels)})
        return hit[1]

    def ops_key(self, stats: StepStats) -> int:
        self.rows(stats.ops)  # keeps the index alive while its key is cached
        return self._keys.setdefault(id(stats.ops), stats.step)

    def step(self, step: int) -> StepStats:
        for stats in reversed(self.history.steps):  # the newest are asked most
            if stats.step == step:
                return stats
        raise RequestError(f"no traced step {quote(step)}")

    def added(self, stats: StepStats) -> None:
        """A new step: what `info` reports of it, computed once."""
        self._nonfinite[stats.step] = stats.nonfinite

    def info(self) -> protocol.MonitorInfo:
        """The `monitor` trait: cheap per step (the non-finite flags are computed once)."""
        h = self.history
        for s in h.steps:
            if s.step not in self._nonfinite:
                self.added(s)
        return {
            "steps": h.step_numbers,
            "kept": sorted(h.kept),
            "nonfinite": [s for s, bad in self._nonfinite.items() if bad],
            "grads": h.grads,
            "stats": list(h.stats),
            "every": h.every,
        }


def _choice(name: str, value: object, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in options:
        raise RequestError(f"{name} must be one of {', '.join(options)}, got {quote(value)}")
    return value


def _int(name: str, value: object) -> int:
    try:
        return require_int(name, value)
    except ValueError as e:
        raise RequestError(str(e)) from e


def _side_values(stats: StepStats, side: str) -> np.ndarray:
    values = stats.side(side)
    if values is None:
        raise RequestError("this monitor did not watch gradients (Monitor(grads=False))")
    return values


def relative_change(now: np.ndarray, first: np.ndarray) -> np.ndarray:
    """|now - first| / |first| (absolute where |first| is ~0); NaN where either is NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(np.abs(first) > _TINY, np.abs(first), 1.0)
        change = np.abs(now - first) / scale
    change[np.isnan(now) != np.isnan(first)] = math.inf  # gained or lost a value: changed
    change[np.isnan(now) & np.isnan(first)] = math.nan
    return change


def step_column(source: MonitorSource, stats: StepStats, side: str, stat: str) -> np.ndarray:
    """`stat` of every op of `stats` (rows of its op index)."""
    return _side_values(stats, side)[:, STAT_NAMES.index(stat)]


def change_column(source: MonitorSource, stats: StepStats, side: str, stat: str) -> np.ndarray:
    """The relative change of `stat` since the first traced step, per op of `stats`."""
    first = source.history.steps[0]
    now = step_column(source, stats, side, stat)
    then_all = step_column(source, first, side, stat)
    if first.ops is stats.ops:
        then = then_all
    else:  # another graph: by label, NaN for ops the first step did not run
        rows = source.rows(first.ops)
        then = np.array([then_all[rows[lb]] if lb in rows else math.nan for lb in stats.ops.labels])
    return relative_change(now, then)


def _nonfinite_rows(stats: StepStats) -> np.ndarray:
    bad = np.zeros(len(stats.ops), dtype=bool)
    for side in SIDES:
        values = stats.side(side)
        if values is not None:
            bad |= np.nan_to_num(values[:, _NAN]) + np.nan_to_num(values[:, _INF]) > 0
    return bad


def ranked(
    source: MonitorSource, stats: StepStats, side: str, stat: str, top: int
) -> list[protocol.MonitorRankedOp]:
    """The ops with a NaN/Inf output or gradient at the step (the one that made it first,
    then in execution order), then the `top` others whose `stat` changed most since the
    first step (most first)."""
    change = change_column(source, stats, side, stat)
    bad = _nonfinite_rows(stats)
    labels = stats.ops.labels
    out: list[protocol.MonitorRankedOp] = []

    def row(i: int, nonfinite: bool) -> protocol.MonitorRankedOp:
        value = float(change[i])
        return {
            "id": labels[i],
            "change": value if math.isfinite(value) else None,
            "nonfinite": nonfinite,
        }

    first = stats.first_nonfinite[0] if stats.first_nonfinite else None
    bad_rows = np.flatnonzero(bad).tolist()
    bad_rows.sort(key=lambda i: labels[i] != first)  # the op that made the NaN/Inf first
    out.extend(row(i, True) for i in bad_rows)
    finite = np.flatnonzero(~bad & np.isfinite(change))
    order = finite[np.argsort(-change[finite], kind="stable")][:top]
    out.extend(row(i, False) for i in order.tolist())
    return out


def monitor_step(source: MonitorSource, params: object) -> Answer:
    """One statistic of every op at one step (buffers[0], float32, in the order of the ids
    of `opsKey`), with the ranked list of the ops that changed most or went non-finite."""
    p = request_params(params, {"step", "side", "stat", "mode", "top", "idsOf"}, {"step", "stat"})
    step = source.step(_int("step", p["step"]))
    side = _choice("side", p.get("side", "activation"), SIDES)
    stat = _choice("stat", p["stat"], STAT_NAMES)
    mode = _choice("mode", p.get("mode", "value"), MODES)
    top = _int("top", p.get("top", DEFAULT_TOP))
    if not 0 <= top <= MAX_TOP:
        raise RequestError(f"top must be in [0, {MAX_TOP}], got {top}")
    ids_of = p.get("idsOf")
    if ids_of is not None:
        _int("idsOf", ids_of)
    if mode == "value":
        column = step_column(source, step, side, stat)
    else:
        column = change_column(source, step, side, stat)
    key = source.ops_key(step)
    first = step.first_nonfinite
    result: protocol.MonitorStepResult = {
        "step": step.step,
        "side": cast(protocol.MonitorSide, side),  # checked against SIDES
        "stat": cast(protocol.MonitorStat, stat),  # ... STAT_NAMES
        "mode": cast(protocol.MonitorMode, mode),  # ... MODES
        "opsKey": key,
        "ids": None if ids_of == key else list(step.ops.labels),
        "ranked": ranked(source, step, side, stat, top),
        "firstNonfinite": None
        if first is None
        else {"id": first[0], "side": cast(protocol.MonitorSide, first[1])},
    }
    return result, [column.astype("<f4").tobytes()]


def monitor_series(source: MonitorSource, params: object) -> Answer:
    """One op's statistics over the steps it ran in: buffers[i] holds, for `sides[i]`,
    float32 rows of STAT_NAMES per step (NaN: no value)."""
    p = request_params(params, {"id"}, {"id"})
    label = p["id"]
    if not isinstance(label, str):
        raise RequestError(f"id must be a string, got {type(label).__name__}")
    history = source.history
    steps: list[int] = []
    rows: dict[str, list[np.ndarray]] = {side: [] for side in SIDES}
    for stats in history.steps:
        row = source.rows(stats.ops).get(label)
        if row is None:
            continue
        steps.append(stats.step)
        for side in SIDES:
            values = stats.side(side)
            if values is not None:
                rows[side].append(values[row])
    if not steps:
        raise RequestError(f"op {quote(cut(label))} ran in no traced step")
    sides = [side for side in SIDES if rows[side]]
    kept = [s for s in steps if s in history.kept and label in history.kept[s].by_label]
    result: protocol.MonitorSeriesResult = {
        "id": label,
        "steps": steps,
        "stats": list(STAT_NAMES),
        "sides": cast(list[protocol.MonitorSide], sides),  # a subset of SIDES
        "kept": kept,
    }
    buffers = [np.stack(rows[side]).astype("<f4").tobytes() for side in sides]
    return result, buffers


def kept_log(source: MonitorSource | None, step: object) -> ModelLog:
    """Kept step `step`'s whole ModelLog, for an "activation" request of that step."""
    if source is None:
        raise RequestError("step is only for a monitor's widget (LensWidget.from_monitor)")
    number = _int("step", step)
    log = source.history.kept.get(number)
    if log is None:
        raise RequestError(f"step {number} was not kept whole (Monitor(keep=...))")
    return log
