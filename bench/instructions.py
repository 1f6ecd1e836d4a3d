"""Per-op cost of `lens_widget.trace` on real models, counted by callgrind instead of timed.

    python -m bench.instructions [--models gpt2,bert,llama,resnet] [--size issue|bench]
                                 [--baseline REV] [--floors] [--repeats 2] [--cache] [--parts]
                                 [--by-kind] [--step]

`bench.real_per_op` times each variant (the floors, `trace(save=None)`, `trace(save="all")`,
a baseline's traces) against a plain forward; on this 2-core VM a whole trace moves 10-20%
between rounds, so a change of 1-2 µs per op, the size of each per-op cut still open in
issue #37, cannot be seen there. Here the same variants run under valgrind's callgrind, one
process, one thread, Python's hash seed fixed: each run's instructions are counted (and with
`--cache`, its simulated misses of a 32 KiB L1 and a 32 MiB last-level cache, from which an
estimate of cycles is made as kcachegrind does: instructions + 10 x L1 misses + 100 x
last-level misses). The kernels' own instructions and misses are counted too, so a plain
forward's are subtracted as the timed bench does; what is left is the tracer's, in thousands
of instructions (or estimated cycles) per recorded op, and ÷ the rows floor's.

`--parts` counts instead each part of one trace as `bench.trace_parts` takes it apart (the
walk naming the model, the `Session`, its inputs, `start`, the forward, `finish`, the first
read of `log.nodes`), per recorded op: what a trace pays once, against what it pays per op.

`--step` counts `bench.training_step`'s contenders instead (a plain training step, its
floor, `lw.tracing(grads=True)`, a baseline's; the same dropout masks in each run), per
forward op above the plain step.

`--by-kind` counts instead the plain forward, the log-rows floor and `trace(save=None)` once
each, keeps callgrind's count per C function, and prints the floor's instructions above plain
and the trace's above the floor by kind of work (`bench.instruction_groups`: the interpreter's
loop, allocation, lookups, torch, ...): whether a gap is one C call or Python running more.

A count is not a time: a cache miss costs what the machine makes it cost, and the simulated
caches are not this machine's. What it gives is a figure that barely moves between runs
(`--repeats` shows each run's: above plain, a trace's agree within 2%, a floor's within 5%),
so that two revisions (`--baseline`) are told apart by one run. The times stay
`bench.real_per_op`'s.

Needs valgrind and its headers (Debian's `valgrind` package) and a C compiler: the client
requests that zero and dump the counts around each run are compiled into a small library
at start. Slow: importing torch under valgrind takes a minute, each traced forward seconds.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from .instruction_groups import by_kind, difference, self_costs

_ENV = "LENS_WIDGET_CALLGRIND"  # set in the process valgrind runs: the helper library's path
_OUT = "LENS_WIDGET_CALLGRIND_OUT"  # where callgrind writes its dumps
_HELPER_C = """
#include <valgrind/callgrind.h>
void lw_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void lw_zero(void) { CALLGRIND_ZERO_STATS; }
void lw_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
int lw_running(void) { return RUNNING_ON_VALGRIND; }
"""
# (cost name, weight) of the cycle estimate (kcachegrind's): an L1 miss ~10 cycles, a
# last-level one ~100
_CYCLES = (("Ir", 1), ("I1mr", 10), ("D1mr", 10), ("D1mw", 10),
           ("ILmr", 100), ("DLmr", 100), ("DLmw", 100))  # fmt: skip
_CACHES = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=33554432,16,64")


def missing_tools() -> str | None:
    """What this bench lacks here (valgrind, its headers, a C compiler), None if nothing."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: apt-get install valgrind)"
    if not Path("/usr/include/valgrind/callgrind.h").exists():
        return "valgrind's headers are not installed (valgrind/callgrind.h)"
    if shutil.which("cc") is None:
        return "no C compiler (cc) to build the client requests"
    return None


def build_helper(into: Path) -> Path:
    """The client-request library, compiled into `into`."""
    source, library = into / "callgrind_requests.c", into / "callgrind_requests.so"
    source.write_text(_HELPER_C)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def parse_dump(text: str) -> dict[str, int]:
    """The totals of one callgrind dump, by event name ({"Ir": ..., "D1mr": ...})."""
    events: list[str] = []
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            return dict(zip(events, map(int, line.split()[1:]), strict=True))
    raise ValueError("not a callgrind dump: no summary line")


def cost(counts: dict[str, int], cycles: bool) -> int:
    """Instructions, or the cycle estimate when the caches were simulated."""
    if not cycles:
        return counts["Ir"]
    return sum(weight * counts.get(name, 0) for name, weight in _CYCLES)


class Counter:
    """Zeroes callgrind's counts, runs a call, dumps them and reads the dump back."""

    def __init__(self, library: str, out: Path) -> None:
        self._lib = ctypes.CDLL(library)
        if not self._lib.lw_running():
            raise RuntimeError("not running under valgrind")
        self._out = out
        self._dumps = 0
        self._lib.lw_start()

    def count(self, run: Callable[[], Any]) -> dict[str, int]:
        """The run's totals, by event name."""
        path = self._dump(run)
        counts = parse_dump(path.read_text())
        path.unlink()
        return counts

    def per_function(self, run: Callable[[], Any]) -> tuple[dict[str, int], int]:
        """The run's instructions by the C function that ran them (self cost), and how many
        more those add up to than the run's count: costs the dump gives to the contexts that
        were active when the counts were zeroed (the calling frames), from before the zero.
        Large in the first dump (all of the warm-up since callgrind started), a few hundred
        thousand after."""
        path = self._dump(run)
        costs = self_costs(path)
        extra = sum(costs.values()) - parse_dump(path.read_text())["Ir"]
        path.unlink()
        return costs, extra

    def _dump(self, run: Callable[[], Any]) -> Path:
        gc.collect()
        self._lib.lw_zero()
        result = run()
        self._lib.lw_dump(b"run")
        del result
        self._dumps += 1
        return self._out.with_name(f"{self._out.name}.{self._dumps}")


def _measure(counter: Counter, args: argparse.Namespace, baseline: Any, current: Any) -> None:
    import torch

    from .real_per_op import ROWS_FLOOR, checked_ops, model_case, variants

    unit = "estimated cycles" if args.cache else "instructions"
    print(f"callgrind, 1 thread; thousands of {unit} per recorded op above the same plain "
          f"forward's, each of {args.repeats} runs; x: ÷ the rows floor's", flush=True)  # fmt: skip
    for name in args.models.split(","):
        case = model_case(name, args.size)
        runs = variants(case, baseline, args.floors, current)
        with torch.no_grad():
            n_ops = checked_ops(case, baseline, current)
            for run in runs.values():  # warm: first calls fill caches of Python and torch
                run()
            costs = {
                variant: [cost(counter.count(run), args.cache) for _ in range(args.repeats)]
                for variant, run in runs.items()
            }
        plain = costs.pop("plain")
        above = {v: [(c - p) / n_ops / 1e3 for c, p in zip(cs, plain, strict=True)]
                 for v, cs in costs.items()}  # fmt: skip
        floor = sum(above[ROWS_FLOOR]) / args.repeats
        print(f"{name}: {n_ops} ops, plain forward {plain[0] / 1e6:.1f} M {unit}", flush=True)
        for variant, each in above.items():
            runs_text = " ".join(f"{x:7.1f}" for x in each)
            mean = sum(each) / len(each)
            print(f"  {variant:36s} {runs_text}  {mean / floor:.2f}x", flush=True)


def _measure_steps(counter: Counter, args: argparse.Namespace, baseline: Any, current: Any) -> None:
    """`bench.training_step`'s contenders counted (see --step), per forward op."""
    import torch

    from .real_per_op import model_case
    from .training_step import step_runs

    unit = "estimated cycles" if args.cache else "instructions"
    print(f"callgrind, 1 thread; thousands of {unit} per forward op of a training step "
          f"above the plain step's, each of {args.repeats} runs; x: ÷ the floor's",
          flush=True)  # fmt: skip

    def seeded(run: Callable[[], Any], clear_grads: Callable[[], None]) -> Callable[[], Any]:
        def step() -> Any:  # the same dropout masks in every run
            clear_grads()
            torch.manual_seed(0)
            return run()

        return step

    for name in args.models.split(","):
        case = model_case(name, args.size)
        contenders, clear_grads = step_runs(case, current, baseline)
        runs = {c: seeded(run, clear_grads) for c, run in contenders.items()}
        with torch.no_grad():
            n_ops = len(current.trace(case.model, case.args, case.kwargs, save=None).ops)

        for run in runs.values():  # warm: first calls fill caches of Python and torch
            run()
        costs = {
            contender: [cost(counter.count(run), args.cache) for _ in range(args.repeats)]
            for contender, run in runs.items()
        }
        clear_grads()
        plain = costs.pop("plain")
        above = {c: [(x - p) / n_ops / 1e3 for x, p in zip(xs, plain, strict=True)]
                 for c, xs in costs.items()}  # fmt: skip
        floor = sum(next(iter(above.values()))) / args.repeats
        print(f"{name}: {n_ops} forward ops, plain step {plain[0] / 1e6:.1f} M {unit}", flush=True)
        for contender, each in above.items():
            mean = sum(each) / len(each)
            runs_text = " ".join(f"{x:7.1f}" for x in each)
            print(f"  {contender:45s} {runs_text}  {mean / floor:.2f}x", flush=True)


def _count_parts(counter: Counter, name: str, args: argparse.Namespace) -> None:
    """Each part of one trace of model `name`, counted (see --parts)."""
    import torch

    from .real_per_op import model_case
    from .trace_parts import PARTS, trace_steps

    case = model_case(name, args.size)
    counts: dict[str, list[int]] = {part: [] for part in PARTS}
    n_ops = 0
    with torch.no_grad():
        for repeat in range(args.repeats + 2):  # two to warm up
            held: dict[str, Any] = {}
            steps = trace_steps(case, held)
            for part in PARTS:
                counted = counter.count(steps[part])
                if repeat >= 2:
                    counts[part].append(cost(counted, args.cache))
            n_ops = len(held["log"].ops)
    print(f"{name}: {n_ops} ops; per part, thousands per recorded op, each run", flush=True)
    for part, each in counts.items():
        print(f"  {part:12s} " + " ".join(f"{c / n_ops / 1e3:8.1f}" for c in each), flush=True)


def _count_kinds(counter: Counter, name: str, args: argparse.Namespace) -> None:
    """The log-rows floor above plain and the trace above that floor, by kind of work (see
    --by-kind), one counted run each after two warm ones and a first dump thrown away (see
    Counter.per_function)."""
    import torch

    import lens_widget as lw

    from .real_per_op import checked_ops, model_case, variants

    case = model_case(name, args.size)
    chain = ("plain", "log-rows floor, save=None", "trace(save=None)")
    runs = variants(case, None, True, lw)
    with torch.no_grad():
        n_ops = checked_ops(case, None, lw)
        for variant in chain:
            runs[variant]()
            runs[variant]()
        counter.count(runs["plain"])  # the first dump, thrown away
        costs, extras = zip(
            *[counter.per_function(runs[variant]) for variant in chain], strict=True
        )
    steps = [by_kind(difference(after, before)) for before, after in pairwise(costs)]
    print(f"{name}: {n_ops} ops; self cost by kind of work, thousands of instructions per op",
          flush=True)  # fmt: skip
    print(f"  {'':44s} {'floor - plain':>14s} {'trace - floor':>14s}", flush=True)
    rows = [(kind, [s[kind] for s in steps]) for kind in steps[0]]
    rows.append(("in all", [sum(s.values()) for s in steps]))
    # what the two runs' extra costs (Counter.per_function) leave in a row: its error
    rows.append(("of which from before the counts (error)", [b - a for a, b in pairwise(extras)]))
    for label, values in rows:
        print(f"  {label:44s} " + " ".join(f"{v / n_ops / 1e3:14.1f}" for v in values), flush=True)


def _under_valgrind(args: argparse.Namespace) -> None:
    import torch

    import lens_widget as lw

    from .real_per_op import package_copy

    torch.set_num_threads(1)
    counter = Counter(os.environ[_ENV], Path(os.environ[_OUT]))
    if args.parts:
        for name in args.models.split(","):
            _count_parts(counter, name, args)
        return
    if args.by_kind:
        for name in args.models.split(","):
            _count_kinds(counter, name, args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        baseline = current = None
        if args.baseline:  # both sides copies, imported alike (as bench.real_per_op does)
            baseline = package_copy("lens_widget_baseline", Path(tmp) / "a", args.baseline)
            current = package_copy("lens_widget_current", Path(tmp) / "b")
        if args.step:
            _measure_steps(counter, args, baseline, current or lw)
        else:
            _measure(counter, args, baseline, current or lw)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,bert,llama,resnet")
    parser.add_argument("--size", choices=("issue", "bench"), default="issue")
    parser.add_argument("--baseline", metavar="REV", help="also count lens_widget at this rev")
    parser.add_argument(
        "--floors", action="store_true", help="only the rows floors and the two traces"
    )
    parser.add_argument("--repeats", type=int, default=2, help="counted runs per variant")
    parser.add_argument("--cache", action="store_true", help="simulate caches: cycle estimate")
    parser.add_argument("--parts", action="store_true", help="count each part of one trace")
    parser.add_argument(
        "--step", action="store_true", help="bench.training_step's steps instead of forwards"
    )
    parser.add_argument(
        "--by-kind", action="store_true",
        help="the floor above plain and the trace above the floor, by kind of work",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if _ENV in os.environ:
        _under_valgrind(args)
        return
    problem = missing_tools()
    if problem:
        raise SystemExit(f"bench.instructions: {problem}")
    with tempfile.TemporaryDirectory() as tmp:
        library, out = build_helper(Path(tmp)), Path(tmp) / "callgrind.out"
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-line=no",
            f"--callgrind-out-file={out}", "--quiet",
            *(("--cache-sim=yes", *_CACHES) if args.cache else ()),
            sys.executable, "-m", "bench.instructions",
            *(sys.argv[1:] if argv is None else argv),
        ]  # fmt: skip
        env = {**os.environ, _ENV: str(library), _OUT: str(out), "PYTHONHASHSEED": "0"}
        subprocess.run(command, check=True, env=env)


if __name__ == "__main__":
    main()
