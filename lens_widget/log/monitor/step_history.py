"""Statistics of every op over the sampled steps of a training run (``lw.Monitor``).

Columnar: one `StepStats` per sampled step, holding for each op of that step's log its
label, module and function, and one row of statistics per side (the op's first output;
the gradient that flowed into it). Steps whose graph is the same share their `OpIndex`,
so 10,000 ops x 200 steps is 200 small float arrays, not two million objects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from lens_widget.log.stats import ActivationStats

if TYPE_CHECKING:
    import pandas as pd

    from lens_widget.log.model_log import ModelLog

# The statistics a row holds, in column order (log/stats.py's ActivationStats)
STAT_NAMES = ("mean", "std", "min", "max", "absmax", "zero_fraction", "nan", "inf", "numel")
SIDES = ("activation", "gradient")


@dataclass(frozen=True)
class OpIndex:
    """The ops of a step's log, in execution order: the rows of its statistics."""

    labels: tuple[str, ...]
    modules: tuple[str, ...]
    funcs: tuple[str, ...]
    # (module address, label of the op that produced its output, last pass), every module
    outputs: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(eq=False)
class StepStats:
    """One sampled step: per op (rows of `ops`) and per statistic (STAT_NAMES columns), the
    activation's and the gradient's figures; NaN where the op has none (not saved, no
    gradient). `first_nonfinite`: (op label, side) of the op that first turned finite
    values into NaN/Inf in this step, or None."""

    step: int
    ops: OpIndex
    activation: np.ndarray  # float64, (len(ops), len(STAT_NAMES))
    gradient: np.ndarray | None  # the same, None when gradients were not watched
    first_nonfinite: tuple[str, str] | None = None

    def side(self, name: str) -> np.ndarray | None:
        return self.activation if name == "activation" else self.gradient

    @property
    def nonfinite(self) -> bool:
        """Some op's output or gradient held NaN or Inf."""
        nan, inf = STAT_NAMES.index("nan"), STAT_NAMES.index("inf")
        return any(
            bool(np.nansum(values[:, nan]) + np.nansum(values[:, inf]))
            for values in (self.activation, self.gradient)
            if values is not None
        )


_NO_ROW = (float("nan"),) * len(STAT_NAMES)
_ROW_OF = attrgetter(*STAT_NAMES)  # the fields by attribute: a row per op and step


def stats_row(stats: ActivationStats | None) -> tuple[float, ...]:
    """One row of STAT_NAMES values (NaN for an op without the value; counts as ints, which
    the history's float64 array takes exactly)."""
    return _NO_ROW if stats is None else _ROW_OF(stats)


@dataclass(eq=False)
class StepHistory:
    """Every sampled step's statistics, in step order, and the steps kept whole.

    What ``lw.Monitor`` collects (``mon.history``) and ``lw.load_monitor`` reads back.
    `every`, `grads` and `stats` are the monitor's settings.
    """

    steps: list[StepStats] = field(default_factory=list)
    kept: dict[int, ModelLog] = field(default_factory=dict)
    # The graph the widget draws: the first traced step's log without its values
    structure: ModelLog | None = None
    every: int = 1
    grads: bool = True
    stats: tuple[str, ...] = STAT_NAMES

    @property
    def step_numbers(self) -> list[int]:
        return [s.step for s in self.steps]

    def first_nonfinite(self) -> tuple[int, str] | None:
        """(step, op label) of the op that first produced NaN/Inf from finite inputs, in the
        first traced step where one did; None when no traced step had one."""
        for step in self.steps:
            if step.first_nonfinite is not None:
                return step.step, step.first_nonfinite[0]
        return None

    def __iter__(self) -> Iterator[StepStats]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, step: StepStats) -> None:
        """Append `step`, sharing the op index of the step before when the ops are the same."""
        if self.steps and self.steps[-1].ops == step.ops:
            step.ops = self.steps[-1].ops
        self.steps.append(step)

    def series(self, label: str, side: str = "activation") -> dict[str, list[float]]:
        """One op's statistics over the steps: {"step": [...], "mean": [...], ...}; steps in
        which the op did not run are left out."""
        out: dict[str, list[float]] = {"step": [], **{name: [] for name in STAT_NAMES}}
        for step in self.steps:
            values = step.side(side)
            if values is None or label not in step.ops.labels:
                continue
            row = values[step.ops.labels.index(label)]
            out["step"].append(step.step)
            for name, value in zip(STAT_NAMES, row, strict=True):
                out[name].append(float(value))
        return out

    def to_pandas(self, sides: Sequence[str] = SIDES) -> pd.DataFrame:
        """One row per (step, op, side): ``step``, ``label``, ``module``, ``func``, ``side``
        ("activation" or "gradient") and the statistics kept (mean, std, min, max, absmax,
        zero_fraction, nan, inf, numel). Needs pandas."""
        import pandas as pd

        frames = []
        for step in self.steps:
            for side in sides:
                values = step.side(side)
                if values is None:
                    continue
                frame = pd.DataFrame(values, columns=list(STAT_NAMES))
                frame.insert(0, "side", side)
                frame.insert(0, "func", step.ops.funcs)
                frame.insert(0, "module", step.ops.modules)
                frame.insert(0, "label", step.ops.labels)
                frame.insert(0, "step", step.step)
                frames.append(frame)
        if not frames:
            columns = ["step", "label", "module", "func", "side", *STAT_NAMES]
            return pd.DataFrame(columns=columns)
        table = pd.concat(frames, ignore_index=True)
        for name in ("nan", "inf", "numel"):  # counts: NaN where the op had no value
            table[name] = table[name].astype("Int64")
        return table.loc[:, ["step", "label", "module", "func", "side", *self.stats]]
