"""Cost of a traced training step against the floor of any tracer of one (issue #37).

    python -m bench.training_step [--models gpt2,bert,llama,resnet] [--rounds 15] [--read]

Per model (`bench.real_per_op`'s issue sizes, in train mode, one thread, a mean-square loss
on the first output), in interleaved rounds, CPU time, `gc.collect()` and `.grad` cleared
before each:

- plain: forward, loss, backward;
- floor: the forward and loss under `bench.tracers.KeepRows` (a row per op and its output
  kept: below it no tracer recording each op in Python goes), and the backward with the
  hooks any gradient capture needs at least: a pre-hook on every autograd node reachable
  from the loss, appending the node and the gradients it gets;
- lw: ``with lw.tracing(model, grads=True)``: the same step, every op's output and gradient
  kept.

The figures are µs per recorded forward op above the same round's plain step (median and
min over rounds), and lw / floor of the medians: the issue asks for at most 1.5. The run
re-executes itself with glibc's allocator thresholds fixed (`bench.measure.with_fixed_allocator`).
``--baseline REV`` also steps with lens_widget at git revision REV in the same rounds (both
sides package copies, imported alike, as `bench.real_per_op --baseline` does) and prints the
change against it, paired by round, with its 95% bootstrap interval. ``--read``: each traced
step's log is read after it (records, modules, gradients, backward graph), so what a step
leaves to its log's first read is counted too.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from itertools import chain
from operator import attrgetter, itemgetter
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

import lens_widget as lw
from model_zoo import ZooCase

from .measure import (
    interleaved_cpu_times,
    median,
    paired_change,
    per_op_above,
    with_fixed_allocator,
)
from .real_per_op import model_case, package_copy
from .tracers import KeepRows

TARGET = 1.5


def _loss(output: Any) -> torch.Tensor:
    first = next(t for t in tree_leaves(output) if isinstance(t, torch.Tensor))
    return first.float().pow(2).mean()


_next_functions = attrgetter("next_functions")
_first = itemgetter(0)


def _reachable(root: Any) -> list[Any]:
    """The autograd nodes reachable from `root`, walked as the cheapest capture known walks
    them: a level at a time, each level's edges read in C loops (as lens_widget does)."""
    known = {root}
    found, level = [root], [root]
    while level:
        reached = set(map(_first, chain.from_iterable(map(_next_functions, level))))
        reached.discard(None)
        reached -= known
        known |= reached
        found += reached
        level = list(reached)
    return found


def _floor_step(case: ZooCase) -> Any:
    with KeepRows(keep_outputs=True) as mode:
        loss = _loss(case.model(*case.args, **case.kwargs))
    grads: list[Any] = []
    handles = [
        node.register_prehook(lambda outs, node=node: grads.append((node, outs)))
        for node in _reachable(loss.grad_fn)
    ]
    try:
        loss.backward()
    finally:
        for handle in handles:
            handle.remove()
    return mode.rows, grads


def _lw_step(case: ZooCase, package: ModuleType = lw, read: bool = False) -> Any:
    with package.tracing(case.model, grads=True) as section:
        _loss(case.model(*case.args, **case.kwargs)).backward()
    log = section.log
    if read:  # what a loop reading every step's log pays: the fill left for the first read
        log.nodes, log.modules, log.leaves, log.backward_passes, log.backward_graph  # noqa: B018
    return log


LW = "lw.tracing(grads=True)"
FLOOR = "floor (rows + a pre-hook per autograd node)"


def step_runs(
    case: ZooCase, current: ModuleType = lw, baseline: ModuleType | None = None, read: bool = False
) -> tuple[dict[str, Callable[[], Any]], Callable[[], None]]:
    """The contenders, by name ("plain" first; "baseline" steps with `baseline`), and what
    clears the model's gradients before each (model in train mode)."""
    model = case.model.train()
    runs: dict[str, Callable[[], Any]] = {
        "plain": lambda: _loss(model(*case.args, **case.kwargs)).backward(),
        FLOOR: lambda: _floor_step(case),
        LW: lambda: _lw_step(case, current, read),
    }
    if baseline is not None:
        runs["baseline"] = lambda: _lw_step(case, baseline, read)

    def clear_grads() -> None:
        for p in model.parameters():
            p.grad = None

    return runs, clear_grads


def measure(
    case: ZooCase,
    rounds: int,
    current: ModuleType = lw,
    baseline: ModuleType | None = None,
    read: bool = False,
) -> tuple[int, dict[str, list[float]]]:
    """(forward ops, {contender: CPU seconds per round}); "baseline" steps with `baseline`;
    `read`: each traced step's log read after it (its records, modules and gradients)."""
    model = case.model.train()
    runs, clear_grads = step_runs(case, current, baseline, read)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        n_ops = len(lw.trace(model, case.args, case.kwargs, save=None).ops)  # the forward's
        times = interleaved_cpu_times(runs, rounds, clear_grads)
    finally:
        torch.set_num_threads(threads)
        for p in model.parameters():
            p.grad = None
    return n_ops, times


def main(argv: list[str] | None = None) -> None:
    with_fixed_allocator("bench.training_step", argv)
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--models", default="gpt2,bert,llama,resnet")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", metavar="REV", help="also lens_widget at this revision")
    parser.add_argument("--read", action="store_true", help="each traced step's log read too")
    opts = parser.parse_args(argv)
    print(
        f"1 thread, CPU time, median (min) of {opts.rounds} interleaved rounds; µs per "
        "forward op above a plain training step"
    )
    with tempfile.TemporaryDirectory() as tmp:
        current, baseline = lw, None
        if opts.baseline:  # both sides copies, imported alike
            baseline = package_copy("lens_widget_baseline", Path(tmp) / "a", opts.baseline)
            current = package_copy("lens_widget_current", Path(tmp) / "b")
        for name in opts.models.split(","):
            n_ops, times = measure(model_case(name), opts.rounds, current, baseline, opts.read)
            per_op = per_op_above(times, n_ops)
            print(f"{name}: {n_ops} forward ops, plain step {median(times['plain']) * 1e3:.1f} ms")
            for contender, (med, low) in per_op.items():
                print(f"  {contender:45s} {med:7.1f} ({low:.1f})")
            floor, traced = (per_op[k][0] for k in list(per_op)[:2])
            print(f"  lw / floor: {traced / floor:.2f} (target <= {TARGET})")
            if baseline is not None:
                change, low, high = paired_change(times, n_ops, LW, "baseline")
                print(f"  lw - {opts.baseline}: {change:+.1f} µs/op [{low:+.1f}, {high:+.1f}]")


if __name__ == "__main__":
    main()
