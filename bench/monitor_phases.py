"""Where a monitored training step's time goes (issue #37), in one run, 1 thread:

    python -m bench.monitor_phases [--width 256] [--rounds 8]

`bench.monitor_bench`'s 2-layer GPT-2 (d=256, 8 x 128 tokens; d=768, 4 x 128), each step
timed (wall time, medians of interleaved rounds, `gc.collect()` before each) around entering
the context, the forward and loss, the backward, the optimizer, and leaving the context, for:
a plain step; the step in `lw.tracing(grads=True)` with `save="all"` and with `save=None`;
`save="all"` without gradients; and `lw.Monitor(every=1).step()` (the trace, every value's
statistics, the history). ``--without-stats`` adds the monitored step with every statistic
replaced by a constant (the worker still takes each value handed to it): what computing
the statistics costs the step, on the worker and after it. ``--baseline REV`` adds the
monitored step of lens_widget at git revision REV, in the same rounds (both sides package
copies, imported alike, as `bench.real_per_op --baseline` does), and prints each monitored
variant's ratio to the plain step of its round, round by round: the median and the 10th to
90th percentile. The variants run in a shuffled order in each round.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import lens_widget as lw
from lens_widget.log.stats import ActivationStats

from .monitor_bench import _gpt2
from .real_per_op import package_copy

PHASES = ("step", "enter", "forward", "backward", "optimizer", "exit")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--without-stats", action="store_true")
    parser.add_argument("--baseline", metavar="REV", help="also the monitored step at this rev")
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = None
        current: ModuleType = lw
        if opts.baseline:  # both sides copies, imported alike
            baseline = package_copy("lens_widget_baseline", Path(tmp) / "a", opts.baseline)
            current = package_copy("lens_widget_current", Path(tmp) / "b")
        _run(opts, current, baseline)


def _run(opts: argparse.Namespace, current: ModuleType, baseline: ModuleType | None) -> None:
    model, loss_of = _gpt2(opts.width, 8 if opts.width == 256 else 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    monitor = current.Monitor(model, every=1)

    def traced(**options: Any) -> Callable[[], Any]:
        return lambda: current.tracing(model, **options)

    contexts: dict[str, Callable[[], Any]] = {
        "plain": contextlib.nullcontext,
        "tracing(grads=True)": traced(grads=True),
        "tracing(grads=True, save=None)": traced(grads=True, save=None),
        "tracing()": traced(),
        "Monitor(every=1)": monitor.step,
    }
    if opts.without_stats:
        worker = importlib.import_module(f"{current.__name__}.capture.monitor.background_stats")
        contexts["Monitor(every=1), no statistics"] = _without_stats(monitor.step, worker)
    if baseline is not None:
        contexts[f"Monitor(every=1) at {opts.baseline}"] = baseline.Monitor(model, every=1).step
    times: dict[str, list[tuple[float, ...]]] = {name: [] for name in contexts}
    # Each round in its own order: a step's time depends on what ran before it, which a
    # fixed order charges to one variant (docs/tracing-cost.md, twelfth session).
    shuffle = random.Random(0).shuffle
    for _ in range(opts.rounds + 1):  # the first round warms up
        order = list(contexts.items())
        shuffle(order)
        for name, context in order:
            gc.collect()
            t0 = time.perf_counter()
            with context():
                t1 = time.perf_counter()
                loss = loss_of()
                t2 = time.perf_counter()
                loss.backward()
                t3 = time.perf_counter()
                opt.step()
                opt.zero_grad()
                t4 = time.perf_counter()
            t5 = time.perf_counter()
            times[name].append((t5 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4))
    plain_steps = [row[0] for row in times["plain"][1:]]
    plain = statistics.median(plain_steps)
    print(f"d={opts.width}, ms per step, medians of {opts.rounds} rounds")
    print(f"{'':32s}" + "".join(f"{p:>10s}" for p in PHASES) + "   x plain")
    for name, rows in times.items():
        medians = [statistics.median(column) * 1e3 for column in zip(*rows[1:], strict=True)]
        cells = "".join(f"{m:10.1f}" for m in medians)
        print(f"{name:32s}{cells}   {medians[0] / 1e3 / plain:.3f}")
    if baseline is not None:
        print("x the plain step of the same round: median (10th-90th percentile)")
        for name, rows in times.items():
            if name.startswith("Monitor"):
                print(f"{name:32s}{_per_round(rows[1:], plain_steps)}")


def _per_round(rows: list[tuple[float, ...]], plain_steps: list[float]) -> str:
    ratios = sorted(row[0] / plain for row, plain in zip(rows, plain_steps, strict=True))
    tenth = len(ratios) // 10
    return f"{statistics.median(ratios):.3f} ({ratios[tenth]:.3f}-{ratios[-1 - tenth]:.3f})"


_CONSTANT = ActivationStats(1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0)


def _without_stats(step: Callable[[], Any], worker: ModuleType) -> Callable[[], Any]:
    """`step` with the worker's and the batch's statistics replaced by a constant (`worker`:
    the package's capture/monitor/background_stats module)."""

    @contextlib.contextmanager
    def context() -> Any:
        saved = worker.host_stats, worker.activation_stats
        worker.host_stats = lambda tensor, host: _CONSTANT
        worker.activation_stats = lambda tensors: [_CONSTANT] * len(tensors)
        try:
            with step():
                yield
        finally:
            worker.host_stats, worker.activation_stats = saved

    return context


if __name__ == "__main__":
    main()
