"""Cost of the per-op metrics and of compare on a GPT-2 of 12 layers (seq 128, random weights).

Run from the repository root: ``python -m bench.metrics_bench [--repeats N] [--seq N]``.
Targets (issue 12; printed, not asserted): tracing with the default metrics within 10% of
tracing without them, and ``lw.compare`` of two such logs under 1 s.

The metrics are computed on first use, so ``trace`` itself does no metric work; the rows
show what computing all of them (``log.compute_metrics()``) adds, with the FLOP cache cold
(a model never counted before) and warm (the same shapes counted once already).
Self-contained: imports nothing from the other bench modules.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import lens_widget as lw
from lens_widget.log import flops as flops_module


def gpt2(n_layer: int, seq: int) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=n_layer)).eval()
    generator = torch.Generator().manual_seed(1)
    ids_a = torch.randint(0, model.config.vocab_size, (1, seq), generator=generator)
    ids_b = torch.randint(0, model.config.vocab_size, (1, seq), generator=generator)
    return model, ids_a, ids_b


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def min_ms(samples: list[float]) -> float:
    return min(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    model, ids_a, ids_b = gpt2(args.layers, args.seq)
    rows: list[tuple[str, list[float]]] = []
    with torch.no_grad():
        model(ids_a)  # warm-up: first-call costs belong to no row
        lw.trace(model, ids_a)

        plain = [timed(lambda: model(ids_a))[0] for _ in range(args.repeats)]
        rows.append(("plain forward", plain))

        trace_only, with_metrics, stats_only, flops_cold, flops_warm = [], [], [], [], []
        log: Any = None
        for _ in range(args.repeats):
            seconds, log = timed(lambda: lw.trace(model, ids_a))
            trace_only.append(seconds)
            flops_module._cache.clear()  # cold: as for a model never counted before
            flops_cold.append(timed(lambda log=log: [op.flops for op in log.ops])[0])
            stats_only.append(timed(lambda log=log: lw.OpRecord.compute_stats(log.ops))[0])
            del log
            # warm: a later trace of the same model (shapes already counted)
            seconds, log = timed(lambda: lw.trace(model, ids_a).compute_metrics())
            with_metrics.append(seconds)
            fresh = lw.trace(model, ids_a)
            flops_warm.append(timed(lambda fresh=fresh: [op.flops for op in fresh.ops])[0])
            del log, fresh

        rows += [
            ("trace (metrics not computed)", trace_only),
            ("  FLOPs of every op, cache cold", flops_cold),
            ("  FLOPs of every op, cache warm", flops_warm),
            ("  stats of every saved activation", stats_only),
            ("trace + compute_metrics() (warm)", with_metrics),
        ]
        a = lw.trace(model, ids_a)
        b = lw.trace(model, ids_b)
        compare_s = [timed(lambda: lw.compare(a, b))[0] for _ in range(args.repeats)]
        cmp = lw.compare(a, b)
        divergence_s = [timed(lambda: cmp.first_divergence())[0] for _ in range(args.repeats)]
        self_s = [timed(lambda: lw.compare(a, a))[0] for _ in range(args.repeats)]
        rows += [
            ("compare(a, b), two inputs", compare_s),
            ("  .first_divergence()", divergence_s),
            ("compare(a, a), one log with itself", self_s),
        ]

    n_ops = len(a.ops)
    saved_mb = a.saved_bytes / 2**20
    print(
        f"GPT-2 n_layer={args.layers} seq={args.seq}: {n_ops} ops, {saved_mb:.0f} MiB saved, "
        f"{torch.get_num_threads()} threads, {args.repeats} runs"
    )
    width = max(len(name) for name, _ in rows)
    print(f"  {''.ljust(width)}  {'median':>9}     {'min':>9}")
    for name, samples in rows:
        print(f"  {name.ljust(width)}  {median_ms(samples):9.1f} ms  {min_ms(samples):9.1f} ms")
    for stat in (median_ms, min_ms):
        overhead = stat(with_metrics) / stat(trace_only) - 1
        print(
            f"  metrics overhead on trace ({stat.__name__[:-3]}, warm): {overhead:+.1%}"
            f"  (target <= +10%); compare under 1 s: {stat(compare_s) < 1000}"
        )


if __name__ == "__main__":
    main()
