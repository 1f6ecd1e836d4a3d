"""Fixed cost per op of `lens_widget.trace`, above a plain forward and above the floor.

    python -m bench.per_op [--rounds 7] [--ops 3000] [--no-gpt2] [--device cuda] [--quick]

The model is a loop of tiny ops (`Linear(8,8)`, relu, add; batch 4) on one thread, so the
time is almost all per-op overhead: 1,000 distinct Linear modules ("distinct", the issue's
measurement: every op a new layer, two parameters and one module call per three ops), and
one Linear reused 1,000 times ("reused": a loop whose layers fold into passes).
Reported, as the median of interleaved rounds:
- plain: the forward alone (ms of CPU time: one thread, so load elsewhere does not count);
- floor: a bare TorchFunctionMode that keeps every output, in µs/op above plain;
- rows floor: a TorchFunctionMode that keeps one row per op of what a record is made of
  (function, call site, producers of its inputs, output metadata) and builds nothing else:
  below it no tracer that records each op in Python can go (tracers.KeepRows);
- trace None / trace all: `lw.trace(save=None)` / `save="all"`, in µs/op above plain;
- TorchLens none / all: `torchlens.trace` without / with saved activations, in µs/op above
  plain, on the distinct loop, when TorchLens is installed (requirements-bench.txt; fewer
  rounds: one of its traces of 3,000 ops takes seconds);
- the same table for a small real transformer (GPT-2 of 6 layers, width 64, 16 tokens):
  torch's Python wrappers, keyword and shape arguments and the per-trace costs over a few
  hundred ops make its per-op figures higher than the loop's;
- GPT-2 6L: `trace(save="all")` time over plain forward time for a GPT-2 of 6 layers,
  d=384, seq 128 (random weights, eval, no_grad), with torch's default threads.

On `--device cuda` the models and inputs live on the GPU, every clock read waits for the
device (torch.cuda.synchronize), and times are wall time (CPU time would miss the GPU's).
Imports nothing of the widget, so it runs where only torch and transformers are installed
(TorchLens too for its rows); `measure_per_op()`, `measure_torchlens_per_op()`,
`measure_small_gpt2_per_op()` and `measure_gpt2_ratio()` return the numbers.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch
from torch import nn

import lens_widget as lw
from model_zoo.case import ZooCase

from .device import DEVICES, device_name, pick_device, synchronizer
from .tracers import KeepOutputs, KeepRows, TorchLens


class TinyLoop(nn.Module):
    """`blocks` x (Linear(8,8), relu, add): 3 traced ops per block, each a distinct layer."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(blocks))
        with torch.no_grad():  # small weights: the residual sum stays finite over 1,000 blocks
            for layer in self.layers:
                layer.weight.mul_(0.05)
                layer.bias.mul_(0.05)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x)) + x
        return x


class ReusedLoop(nn.Module):
    """One Linear(8,8) applied `blocks` times (relu, add): 3 traced ops per block."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.blocks = blocks
        self.layer = nn.Linear(8, 8)
        with torch.no_grad():
            self.layer.weight.mul_(0.05)
            self.layer.bias.mul_(0.05)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.blocks):
            x = torch.relu(self.layer(x)) + x
        return x


def _time(fn: Callable[[], Any], clock: Callable[[], float], sync: Callable[[], None]) -> float:
    gc.collect()
    sync()
    start = clock()
    result = fn()
    sync()
    elapsed = clock() - start
    del result
    return elapsed


@contextmanager
def _one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _tiny_loop(n_ops: int, reused: bool, where: torch.device) -> tuple[nn.Module, tuple[Any, ...]]:
    """The loop of about `n_ops` tiny ops and its input, seeded, on `where`."""
    torch.manual_seed(0)
    model = (ReusedLoop if reused else TinyLoop)(n_ops // 3).eval().to(where)
    return model, (torch.randn(4, 8).to(where),)


def _floor(model: nn.Module, args: tuple[Any, ...]) -> list[Any]:
    mode = KeepOutputs()
    with mode:
        model(*args)
    return mode.outputs


def _rows_floor(model: nn.Module, args: tuple[Any, ...]) -> list[Any]:
    mode = KeepRows(keep_outputs=True)
    with mode:
        model(*args)
    return mode.rows


def _clock(where: torch.device) -> Callable[[], float]:
    """One thread: its CPU time, which other processes on a busy machine leave alone (wall
    time there counts the time spent waiting for a core). On CUDA, wall time: the GPU's work
    is not this process's CPU time."""
    return time.process_time if where.type == "cpu" else time.perf_counter


def _interleaved(
    runs: dict[str, Callable[[], Any]],
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
    sync: Callable[[], None] = lambda: None,
) -> dict[str, float]:
    """Median seconds per variant; one run of each per round, so load drifts hit all alike."""
    for fn in runs.values():  # warm up caches (signatures, code-object kinds)
        fn()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_time(fn, clock, sync))
    return {name: statistics.median(values) for name, values in times.items()}


def _per_op_table(
    model: nn.Module, args: tuple[Any, ...], rounds: int, where: torch.device
) -> dict[str, float]:
    """plain ms and floor / rows floor / trace None / trace all µs per op above plain, one
    thread, for `model(*args)` (model and args on `where`)."""
    with _one_thread(), torch.no_grad():
        n_traced = len(lw.trace(model, args, save=None).ops)
        med = _interleaved(
            {
                "plain": lambda: model(*args),
                "floor": lambda: _floor(model, args),
                "rows": lambda: _rows_floor(model, args),
                "none": lambda: lw.trace(model, args, save=None),
                "all": lambda: lw.trace(model, args, save="all"),
            },
            rounds,
            _clock(where),
            synchronizer(where),
        )
    per_op = {k: (v - med["plain"]) / n_traced * 1e6 for k, v in med.items() if k != "plain"}
    return {
        "ops": n_traced,
        "plain_ms": med["plain"] * 1e3,
        "floor_us": per_op["floor"],
        "rows_floor_us": per_op["rows"],
        "trace_none_us": per_op["none"],
        "trace_all_us": per_op["all"],
    }


def measure_per_op(
    n_ops: int = 3000, rounds: int = 7, reused: bool = False, device: str = "cpu"
) -> dict[str, float]:
    """The per-op table of the tiny-op loop (distinct Linears, or one reused)."""
    where = torch.device(device)
    return _per_op_table(*_tiny_loop(n_ops, reused, where), rounds, where)


def measure_small_gpt2_per_op(rounds: int = 7, device: str = "cpu") -> dict[str, float]:
    """The per-op table of a small real transformer (GPT-2, 6 layers of width 64, 16 tokens,
    KV cache on): torch's Python wrappers (F.layer_norm, dropout), keyword arguments,
    shapes, a cache object in the output, and the per-trace costs over a few hundred ops."""
    from transformers import GPT2Config, GPT2LMHeadModel

    where = torch.device(device)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=6, n_embd=64, n_head=4, vocab_size=500, bos_token_id=0,
                        eos_token_id=0)  # fmt: skip
    ids = torch.randint(0, 500, (1, 16), generator=torch.Generator().manual_seed(1))
    return _per_op_table(GPT2LMHeadModel(config).eval().to(where), (ids.to(where),), rounds, where)


def measure_torchlens_per_op(
    n_ops: int = 3000, rounds: int = 3, device: str = "cpu"
) -> dict[str, float] | None:
    """TorchLens' none / all µs per op above plain on the distinct loop, one thread; None
    when TorchLens is not installed. Its torch wrappers go in before and out after each
    timed call (untimed), so they never slow the plain runs."""
    contenders = {"tl_none": TorchLens(save_all=False), "tl_all": TorchLens(save_all=True)}
    if contenders["tl_none"].available() is not None:
        return None
    where = torch.device(device)
    clock, sync = _clock(where), synchronizer(where)
    case = ZooCase("tiny-op loop", *_tiny_loop(n_ops, False, where))
    times: dict[str, list[float]] = {"plain": [], **{name: [] for name in contenders}}
    with _one_thread(), torch.no_grad():
        for _ in range(rounds):
            times["plain"].append(_time(lambda: case.model(*case.args), clock, sync))
            for name, tl in contenders.items():
                tl.before()
                try:
                    times[name].append(_time(lambda tl=tl: tl.call(case), clock, sync))
                finally:
                    tl.after(None)
    med = {name: statistics.median(values) for name, values in times.items()}
    return {f"{name}_us": (med[name] - med["plain"]) / n_ops * 1e6 for name in contenders}


def measure_gpt2_ratio(rounds: int = 7, device: str = "cpu") -> dict[str, float]:
    """trace(save="all") / plain forward on a 6-layer GPT-2, d=384, seq 128."""
    from transformers import GPT2Config, GPT2LMHeadModel

    where = torch.device(device)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=384, n_head=6)).eval().to(where)
    ids = torch.randint(
        0, model.config.vocab_size, (1, 128), generator=torch.Generator().manual_seed(1)
    ).to(where)
    with torch.no_grad():
        med = _interleaved(
            {"plain": lambda: model(ids), "all": lambda: lw.trace(model, (ids,), save="all")},
            rounds,
            sync=synchronizer(where),
        )
    return {
        "plain_ms": med["plain"] * 1e3,
        "trace_all_ms": med["all"] * 1e3,
        "ratio": med["all"] / med["plain"],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="default 7 (quick: 2)")
    parser.add_argument("--ops", type=int, default=None, help="default 3000 (quick: 300)")
    parser.add_argument("--no-gpt2", action="store_true", help="skip both GPT-2 measurements")
    parser.add_argument("--no-torchlens", action="store_true", help="skip the TorchLens rows")
    parser.add_argument("--device", choices=DEVICES, default="cpu", help="where models run")
    parser.add_argument("--quick", action="store_true", help="300 ops, 2 rounds: a smoke run")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 7)
    args.ops = args.ops or (300 if args.quick else 3000)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    device = pick_device(args.device)
    print(f"device: {device_name(device)}")
    clock = "CPU time" if device.type == "cpu" else "wall time, synchronised"
    loop = partial(measure_per_op, args.ops, args.rounds, device=args.device)
    tables: list[tuple[str, Callable[[], dict[str, float]]]] = [
        ("tiny-op loop (distinct Linears)", partial(loop, reused=False)),
        ("tiny-op loop (one Linear reused)", partial(loop, reused=True)),
    ]
    if not args.no_gpt2:
        small = partial(measure_small_gpt2_per_op, args.rounds, args.device)
        tables.append(("GPT-2 6L d=64, 16 tokens", small))
    for i, (title, measure) in enumerate(tables):
        r = measure()
        print(f"{title}, {r['ops']:.0f} ops, 1 thread, median of {args.rounds} ({clock})")
        print(f"  plain forward              {r['plain_ms']:8.1f} ms")
        print(f"  floor (bare mode, keeps)   {r['floor_us']:8.1f} µs/op above plain")
        print(f"  rows floor (a row per op)  {r['rows_floor_us']:8.1f} µs/op above plain")
        print(f"  trace(save=None)           {r['trace_none_us']:8.1f} µs/op above plain")
        print(f'  trace(save="all")          {r["trace_all_us"]:8.1f} µs/op above plain')
        tl = measure_torchlens_per_op(args.ops) if i == 0 and not args.no_torchlens else None
        if tl is not None:  # the distinct loop, the measurement
            print(f"  TorchLens (none), 3 rounds {tl['tl_none_us']:8.1f} µs/op above plain")
            print(f"  TorchLens (all), 3 rounds  {tl['tl_all_us']:8.1f} µs/op above plain")
    if not args.no_gpt2:
        g = measure_gpt2_ratio(args.rounds, args.device)
        print(
            f"GPT-2 6L d=384 seq 128, {torch.get_num_threads()} threads: plain "
            f'{g["plain_ms"]:.1f} ms, trace(save="all") {g["trace_all_ms"]:.1f} ms, '
            f"ratio {g['ratio']:.2f}x"
        )


if __name__ == "__main__":
    main()
