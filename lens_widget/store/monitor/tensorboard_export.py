"""A monitor's history as TensorBoard scalars (``mon.to_tensorboard(logdir)``), written with
``torch.utils.tensorboard`` (the optional ``tensorboard`` package).

Tags group by module, so TensorBoard's sections are the model's modules without a plugin:
``<module>/<op label>/<side>/<statistic>`` (module "" is ``(top)``), plus one series per
module output, ``<module>/(output)/<side>/<statistic>``: the op that produced the module's
last pass output, at each step.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from lens_widget.log.monitor.step_history import SIDES, STAT_NAMES, StepHistory

TOP = "(top)"


def write_tensorboard(history: StepHistory, logdir: str | os.PathLike[str]) -> Path:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError(
            "to_tensorboard needs the tensorboard package: pip install lens_widget[tensorboard]"
        ) from err
    directory = Path(logdir)
    columns = [STAT_NAMES.index(name) for name in history.stats]
    numel = STAT_NAMES.index("numel")
    writer = SummaryWriter(log_dir=str(directory))
    try:
        for step in history.steps:
            ops = step.ops
            row = {label: i for i, label in enumerate(ops.labels)}
            series = [
                (f"{module or TOP}/{label}", i)
                for i, (label, module) in enumerate(zip(ops.labels, ops.modules, strict=True))
            ] + [(f"{module or TOP}/(output)", row[label]) for module, label in ops.outputs]
            for side in SIDES:
                values = step.side(side)
                for prefix, i in series if values is not None else ():
                    if math.isnan(values[i, numel]):  # pyright: ignore[reportOptionalSubscript]  # not None in this loop
                        continue  # the op has no such value (not saved, no gradient)
                    for column in columns:  # NaN too (all values non-finite): a gap in the plot
                        tag = f"{prefix}/{side}/{STAT_NAMES[column]}"
                        writer.add_scalar(tag, float(values[i, column]), step.step)  # pyright: ignore[reportOptionalSubscript]
    finally:
        writer.close()
    return directory
