"""Where a monitored training step's time goes (issue #37), in one run, 1 thread:

    python -m bench.monitor_phases [--width 256] [--rounds 8]

`bench.monitor_bench`'s 2-layer GPT-2 (d=256, 8 x 128 tokens; d=768, 4 x 128), each step
timed (wall time, medians of interleaved rounds, `gc.collect()` before each) around entering
the context, the forward and loss, the backward, the optimizer, and leaving the context, for:
a plain step; the step in `lw.tracing(grads=True)` with `save="all"` and with `save=None`;
`save="all"` without gradients; and `lw.Monitor(every=1).step()` (the trace, every value's
statistics, the history). ``--without-stats`` adds the monitored step with every statistic
replaced by a constant (the worker still takes each value from its queue): what computing
the statistics costs the step, on the worker and after it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import lens_widget as lw
from lens_widget.capture.monitor import background_stats
from lens_widget.log.stats import ActivationStats

from .monitor_bench import _gpt2

PHASES = ("step", "enter", "forward", "backward", "optimizer", "exit")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--without-stats", action="store_true")
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    model, loss_of = _gpt2(opts.width, 8 if opts.width == 256 else 4)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    monitor = lw.Monitor(model, every=1)

    def traced(**options: Any) -> Callable[[], Any]:
        return lambda: lw.tracing(model, **options)

    contexts: dict[str, Callable[[], Any]] = {
        "plain": contextlib.nullcontext,
        "tracing(grads=True)": traced(grads=True),
        "tracing(grads=True, save=None)": traced(grads=True, save=None),
        "tracing()": traced(),
        "Monitor(every=1)": monitor.step,
    }
    if opts.without_stats:
        contexts["Monitor(every=1), no statistics"] = _without_stats(monitor.step)
    times: dict[str, list[tuple[float, ...]]] = {name: [] for name in contexts}
    for _ in range(opts.rounds + 1):  # the first round warms up
        for name, context in contexts.items():
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
    plain = statistics.median(row[0] for row in times["plain"][1:])
    print(f"d={opts.width}, ms per step, medians of {opts.rounds} rounds")
    print(f"{'':32s}" + "".join(f"{p:>10s}" for p in PHASES) + "   x plain")
    for name, rows in times.items():
        medians = [statistics.median(column) * 1e3 for column in zip(*rows[1:], strict=True)]
        cells = "".join(f"{m:10.1f}" for m in medians)
        print(f"{name:32s}{cells}   {medians[0] / 1e3 / plain:.3f}")


_CONSTANT = ActivationStats(1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0)


def _without_stats(step: Callable[[], Any]) -> Callable[[], Any]:
    """`step` with the worker's and the batch's statistics replaced by a constant."""

    @contextlib.contextmanager
    def context() -> Any:
        saved = background_stats.host_stats, background_stats.activation_stats
        background_stats.host_stats = lambda tensor, host: _CONSTANT
        background_stats.activation_stats = lambda tensors: [_CONSTANT] * len(tensors)
        try:
            with step():
                yield
        finally:
            background_stats.host_stats, background_stats.activation_stats = saved

    return context


if __name__ == "__main__":
    main()
