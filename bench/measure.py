"""Timing and memory primitives shared by the benches.

Memory: torch's CPU allocator keeps no statistics and tracemalloc does not see it, so we read
the process's resident set from /proc. Before each measured call we hand freed heap pages back
to the OS (glibc malloc_trim) and reset the kernel's high-water mark (clear_refs 5); the peak
is then VmHWM minus the RSS just before the call.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
        except OSError:
            _LIBC = False
    return _LIBC


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        match = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def settle() -> None:
    """Collect garbage and return free heap memory to the OS, so RSS reflects live data."""
    gc.collect()
    libc = _libc()
    if libc:
        libc.malloc_trim(0)


def peak_rss_delta(fn: Callable[[], Any]) -> tuple[int, int, Any]:
    """Run fn once: (peak RSS above the start in bytes, RSS still held after it, fn's result)."""
    settle()
    start = _status_kb("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        resettable = True
    except OSError:
        resettable = False
    result = fn()
    peak = _status_kb("VmHWM") if resettable else _status_kb("VmRSS")
    gc.collect()
    held = _status_kb("VmRSS") - start
    return max(0, peak - start) * 1024, max(0, held) * 1024, result


def timed(fn: Callable[[], Any], sync: Callable[[], None] = lambda: None) -> tuple[float, Any]:
    """Seconds one call of fn takes (after a gc.collect so each run starts from a clean heap).
    `sync` runs before each clock read: on CUDA it waits for the queued kernels."""
    gc.collect()
    sync()
    t0 = time.perf_counter()
    result = fn()
    sync()
    return time.perf_counter() - t0, result


def interleaved_cpu_times(
    runs: dict[str, Callable[[], Any]],
    rounds: int,
    before_each: Callable[[], None] = lambda: None,
) -> dict[str, list[float]]:
    """CPU seconds of each of `runs` per round, after one warm-up call each; the order
    alternates between rounds (the first run stays first) so that drifts hit every run
    alike; `before_each` and `gc.collect()` before each call, the result dropped after."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs)
    for i in range(rounds):
        for name in order if i % 2 == 0 else [order[0], *reversed(order[1:])]:
            before_each()
            gc.collect()
            start = time.process_time()
            result = runs[name]()
            times[name].append(time.process_time() - start)
            del result
    return times


def per_op_above(
    times: dict[str, list[float]], n_ops: int, base: str = "plain"
) -> dict[str, tuple[float, float]]:
    """Per run but `base`: (median, min) over rounds of its time above the same round's
    `base` run, in µs per op. Pairs by round cancel the drifts between rounds (allocations,
    the host's other load), which moved a plain forward by 2x on a quiet 2-core VM."""
    per_op = {}
    for name in times:
        if name != base:
            above = _per_op_differences(times, n_ops, name, base)
            per_op[name] = (statistics.median(above), min(above))
    return per_op


def _per_op_differences(
    times: dict[str, list[float]], n_ops: int, name: str, base: str
) -> list[float]:
    """Per round, `name`'s time minus `base`'s in the same round, in µs per op."""
    return [(t - b) / n_ops * 1e6 for t, b in zip(times[name], times[base], strict=True)]


def paired_change(
    times: dict[str, list[float]], n_ops: int, name: str, before: str, resamples: int = 2000
) -> tuple[float, float, float]:
    """How much `name` changed against `before`, timed in the same rounds: the median over
    rounds of their difference in µs per op, and its 95% bootstrap interval (rounds drawn
    with replacement, a fixed seed). An interval that holds 0 is a change this run cannot
    tell from the noise; on this 2-core VM a whole trace moves by 10-20% between rounds."""
    diffs = _per_op_differences(times, n_ops, name, before)
    draw = random.Random(0).choices
    medians = sorted(statistics.median(draw(diffs, k=len(diffs))) for _ in range(resamples))
    low, high = medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]
    return statistics.median(diffs), low, high


def paired_ratio(
    times: dict[str, list[float]],
    name: str,
    over: str,
    base: str = "plain",
    resamples: int = 2000,
) -> tuple[float, float, float]:
    """How many times `over`'s cost `name`'s is, both above `base` in the same rounds: the
    ratio of their medians over rounds, and its 95% bootstrap interval (rounds drawn with
    replacement, all three runs of a round together, a fixed seed). An interval above a
    target ratio says this run puts `name` over it whatever its noise."""
    above = _per_op_differences(times, 1, name, base)
    under = _per_op_differences(times, 1, over, base)
    rounds = range(len(above))
    draw = random.Random(0).choices
    ratios = []
    for _ in range(resamples):
        picked = draw(rounds, k=len(above))
        top = statistics.median(above[i] for i in picked)
        ratios.append(top / statistics.median(under[i] for i in picked))
    ratios.sort()
    low, high = ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]
    return statistics.median(above) / statistics.median(under), low, high


# glibc's thresholds fixed: freed big blocks (GPT-2's 25 MB logits, a training step's
# buffers) stay in the heap instead of going back to the OS and being faulted in again on the
# next run: left to itself, a plain BERT training step's CPU time varied 58-122 ms here,
# against 53-70 ms with these fixed.
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "4294967296"}


def with_fixed_allocator(module: str, argv: list[str] | None) -> None:
    """Re-execute ``python -m module argv`` with ALLOCATOR_ENV set, unless it is set already
    (glibc reads it once, at start)."""
    if any(os.environ.get(k) != v for k, v in ALLOCATOR_ENV.items()):
        args = [sys.executable, "-m", module, *(sys.argv[1:] if argv is None else argv)]
        os.execve(sys.executable, args, {**os.environ, **ALLOCATOR_ENV})


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    ordered = sorted(xs)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def run_section(
    parser: argparse.ArgumentParser,
    run: Callable[[argparse.Namespace], dict[str, Any]],
    argv: list[str] | None,
) -> dict[str, Any]:
    """A section's command line: its own options plus `--json` and `--threads`, as bench.run."""
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (as bench.run)")
    args = parser.parse_args(argv)
    import torch  # here: the rest of this module needs no torch

    torch.set_num_threads(args.threads)
    summary = run(args)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=1)
    return summary
