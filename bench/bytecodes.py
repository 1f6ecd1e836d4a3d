"""Python bytecodes a traced forward runs per op, by function: where the per-op path's work
is, counted the same on every run.

    python -m bench.bytecodes [--models bert,resnet] [--size issue|bench] [--top 30] [--step]

The models of `bench.real_per_op` (issue sizes unless `--size bench`, one thread,
`torch.no_grad()`). Each forward runs once to warm up, then once under ``sys.settrace`` with
``f_trace_opcodes``, which sees every bytecode Python runs: a plain forward, the log-rows
floor's (`bench.tracers.KeepLogRows`, save=None: what this log's content costs at least)
and a trace's (its `Session` made and started before, finished after: the forward only).
Printed per model: bytecodes per recorded op in all, and per function the trace's and the
floor's above the plain forward's, largest first. ``--step``: `bench.training_step`'s
steps instead (in train mode: forward, loss and backward plain; its floor, rows and a
pre-hook per autograd node; ``lw.tracing(grads=True)``, its exit included), per forward op.

A bytecode is not a time (a `STORE_ATTR` costs a few instructions, a call into torch
thousands), and the kernels run no bytecode at all; `bench.instructions` counts the machine's
instructions, `bench.real_per_op` times. What this adds is which Python function the
difference is in, without the sampling of a profiler: a cut that takes 40 bytecodes out of
every op shows here as 40, whatever the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

import lens_widget as lw

from .real_per_op import model_case
from .trace_parts import trace_steps
from .tracers import KeepLogRows
from .training_step import _floor_step, _loss, _lw_step

Function = tuple[str, str]  # (file, relative to site-packages or the checkout; name)
# A counted run: calls its first argument where counting starts, its second where it stops
Run = Callable[[Callable[[], None], Callable[[], None]], Any]


def _where(filename: str) -> str:
    for marker in ("/site-packages/", "/lens_widget/", "/bench/"):
        if marker in filename:
            head = marker.strip("/") + "/" if marker != "/site-packages/" else ""
            return head + filename.split(marker, 1)[1]
    return filename


def count_bytecodes(run: Run) -> Counter[Function]:
    """Bytecodes per function run between the two calls `run` makes of the callbacks it is
    given (start counting, stop counting)."""
    counts: Counter[Function] = Counter()
    names: dict[Any, Function] = {}  # code -> its Function, named once

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            code = frame.f_code
            name = names.get(code)
            if name is None:
                name = names[code] = (_where(code.co_filename), code.co_qualname)
            counts[name] += 1
        return trace

    before = sys.gettrace()  # a debugger's or coverage's, put back after

    def start() -> None:
        sys.settrace(trace)

    def stop() -> None:
        sys.settrace(before)

    run(start, stop)
    return counts


def _plain(case: Any) -> Run:
    def run(start: Callable[[], None], stop: Callable[[], None]) -> None:
        start()
        case.model(*case.args, **case.kwargs)
        stop()

    return run


def _floor(case: Any) -> Run:
    def run(start: Callable[[], None], stop: Callable[[], None]) -> None:
        with KeepLogRows(False, case.model):
            start()
            case.model(*case.args, **case.kwargs)
            stop()

    return run


def _trace(case: Any) -> Run:
    def run(start: Callable[[], None], stop: Callable[[], None]) -> Any:
        held: dict[str, Any] = {}
        steps = trace_steps(case, held)  # the trace taken apart as bench.trace_parts does
        for part in ("names", "session", "inputs", "start"):
            steps[part]()
        start()
        try:
            steps["forward"]()
        except BaseException as err:
            stop()
            held["session"].finish(None, err)  # puts back what the trace put in place
            raise
        stop()
        return steps["finish"]()

    return run


def _steps(case: Any) -> dict[str, Run]:
    """`bench.training_step`'s three steps (forward, loss, backward; the floor's rows and
    pre-hooks, and `lw.tracing(grads=True)` with its exit), each counted whole."""
    model = case.model.train()

    def counted(step: Callable[[], Any]) -> Run:
        def run(start: Callable[[], None], stop: Callable[[], None]) -> None:
            for p in model.parameters():
                p.grad = None
            start()
            step()
            stop()

        return run

    return {
        "plain": counted(lambda: _loss(model(*case.args, **case.kwargs)).backward()),
        "floor": counted(lambda: _floor_step(case)),
        "trace": counted(lambda: _lw_step(case)),
    }


def measure(case: Any, step: bool = False) -> tuple[int, dict[str, Counter[Function]]]:
    """(recorded ops, {"plain" | "floor" | "trace": bytecodes per function of one forward});
    `step`: of one training step each (`_steps`), per op of its forward."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with contextlib.nullcontext() if step else torch.no_grad():
            runs = _steps(case) if step else {
                "plain": _plain(case), "floor": _floor(case), "trace": _trace(case)
            }  # fmt: skip
            with torch.no_grad():
                n_ops = len(lw.trace(case.model, case.args, case.kwargs, save=None).ops)
            for run in runs.values():  # warm: Python specialises bytecode as it first runs
                run(lambda: None, lambda: None)
            return n_ops, {name: count_bytecodes(run) for name, run in runs.items()}
    finally:
        torch.set_num_threads(threads)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert,resnet")
    parser.add_argument("--size", choices=("issue", "bench"), default="issue")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--step", action="store_true", help="a training step, as training_step")
    args = parser.parse_args(argv)
    floor_name = "floor (rows + a pre-hook per node)" if args.step else "log-rows floor"
    for name in args.models.split(","):
        n_ops, counts = measure(model_case(name, args.size), args.step)
        plain, floor, trace = counts["plain"], counts["floor"], counts["trace"]
        total = {k: sum(c.values()) / n_ops for k, c in counts.items()}
        print(
            f"{name}: {n_ops} {'forward ' if args.step else ''}ops; bytecodes per op: plain "
            f"{total['plain']:.0f}, {floor_name} {total['floor']:.0f}, trace "
            f"{total['trace']:.0f}; per function above plain:"
        )
        print(f"  {'trace':>7s} {'floor':>7s}  function")
        largest = sorted(set(trace) | set(floor), key=lambda f: plain[f] - max(trace[f], floor[f]))
        for function in largest[: args.top]:
            above = [(c[function] - plain[function]) / n_ops for c in (trace, floor)]
            print(f"  {above[0]:7.1f} {above[1]:7.1f}  {function[0]}:{function[1]}")


if __name__ == "__main__":
    main()
