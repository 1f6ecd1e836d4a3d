"""Tracing cost per model: every contender interleaved in one process, same grad mode.

Per model: one untimed warm-up run of each contender (its result gives op counts and saved
bytes), then `repeats` rounds; each round runs every contender once, in an order rotated per
round so no contender always runs right after another. Then one memory pass per contender.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from model_zoo import ZooCase

from .measure import median, peak_rss_delta, settle, timed
from .tracers import Mode


def _run(mode: Mode, case: ZooCase, grad: bool, sync: Callable[[], None]) -> tuple[float, Any]:
    mode.before()
    with torch.set_grad_enabled(grad):
        seconds, result = timed(lambda: mode.call(case), sync)
    mode.after(result)
    return seconds, result


def bench_case(
    case: ZooCase,
    modes: list[Mode],
    repeats: int,
    grad: bool = False,
    max_rounds: int = 30,
    memory: bool = True,
    log: Callable[[str], None] = print,
    sync: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """One row of the tracing table. `case` already lives on the device it runs on; `sync`
    waits for that device before each clock read (bench.device.synchronizer)."""
    t_start = time.perf_counter()
    usable: list[Mode] = []
    row: dict[str, Any] = {"model": case.name, "size": case.description, "grad": grad, "modes": {}}
    for mode in modes:
        why = mode.available()
        if why is None:
            usable.append(mode)
        else:
            row["modes"][mode.name] = {"unavailable": why}

    for mode in usable:  # warm-up, and facts about what each produced
        try:
            seconds, result = _run(mode, case, grad, sync)
        except Exception as err:
            row["modes"][mode.name] = {"error": f"{type(err).__name__}: {err}"}
            log(f"    {mode.name}: FAILED {type(err).__name__}: {err}")
            continue
        row["modes"][mode.name] = {
            "warmup_ms": seconds * 1e3,
            **mode.describe(case, result),
        }
        del result
    usable = [m for m in usable if "error" not in row["modes"][m.name]]
    if not usable:
        return row

    # Fast models get more rounds (up to 30, ~3 s of the slowest contender): their medians
    # are otherwise at the mercy of a single hiccup on a shared machine.
    slowest = max((row["modes"][m.name]["warmup_ms"] for m in usable), default=0.0) / 1e3
    rounds = max(repeats, min(max_rounds, int(3.0 / max(slowest, 1e-3))))
    row["rounds"] = rounds
    samples: dict[str, list[float]] = {m.name: [] for m in usable}
    for r in range(rounds):
        shift = r % max(1, len(usable))
        for mode in usable[shift:] + usable[:shift]:
            seconds, result = _run(mode, case, grad, sync)
            samples[mode.name].append(seconds * 1e3)
            del result
    plain = median(samples["plain"]) if "plain" in samples else float("nan")
    for mode in usable:
        entry = row["modes"][mode.name]
        entry["samples_ms"] = [round(s, 3) for s in samples[mode.name]]
        entry["median_ms"] = median(samples[mode.name])
        entry["min_ms"] = min(samples[mode.name]) if samples[mode.name] else float("nan")
        entry["ratio_to_plain"] = entry["median_ms"] / plain

    if memory:
        for mode in usable:
            mode.before()
            with torch.set_grad_enabled(grad):
                peak, held, result = peak_rss_delta(lambda m=mode: m.call(case))
            mode.after(result)
            del result
            settle()
            row["modes"][mode.name]["peak_rss_bytes"] = peak
            row["modes"][mode.name]["held_rss_bytes"] = held

    row["bench_seconds"] = time.perf_counter() - t_start
    summary = ", ".join(f"{m.name} {row['modes'][m.name]['median_ms']:.1f}ms" for m in usable)
    log(f"  {case.name}{' (grad)' if grad else ''}: {summary} [{row['bench_seconds']:.0f}s]")
    return row
