"""Where the per-op cost of `lens_widget.trace` goes, phase by phase, on real models.

    python -m bench.trace_phases [--models gpt2,bert,llama,resnet] [--save none|all]
                                 [--rounds 9] [--size issue|bench]

Copies `lens_widget` into a temporary directory, inserts a read of the thread's CPU clock
(`time.thread_time_ns`, ~0.3 µs a read) at the boundaries of the phases in `PATCHES`, and
traces the models of `bench.real_per_op` with that copy in a child process, one thread. Each
anchor must occur exactly once in the current source: when the recorder changes, this stops
and names the anchor to update.

Printed per model, in µs per recorded op: each phase's median time over the rounds (a phase
includes about one clock read), the torch kernels' time under a bare TorchFunctionMode and
under the trace (the same kernels: a difference is the tracer slowing them), the dispatch into
a mode (a bare forwarding mode's time above plain: paid by any TorchFunctionMode tracer),
and what no timer covers (the trace's time above plain minus all of the above, minus the
clock reads' own cost, which is estimated from their count).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .phase_patches import PATCHES

ROOT = Path(__file__).resolve().parent.parent
_CLOCK = "from time import thread_time_ns as _ns\nfrom lens_widget._phases import PH\n"
_PHASES_MODULE = "from collections import defaultdict\n\nPH = defaultdict(int)\n"

# Phases nested in others: shown, not added to the total.
_NESTED = ("(of which", "(not in the trace")


def instrumented_copy(into: Path) -> None:
    """lens_widget with the clock reads of PATCHES, under `into`."""
    package = into / "lens_widget"
    shutil.copytree(ROOT / "lens_widget", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "_phases.py").write_text(_PHASES_MODULE)
    for name, anchor, replacement in PATCHES:
        path = package / name
        text = path.read_text()
        if text.count(anchor) != 1:
            raise SystemExit(f"bench.trace_phases: anchor not found once in {name}:\n{anchor}")
        path.write_text(text.replace(anchor, replacement.replace("<clock>", _CLOCK)))


def _clock_read_cost() -> float:
    """Seconds per timer boundary (`_ns()` and a counter update), measured here."""
    from time import thread_time_ns as _ns

    counts: dict[str, int] = {"x": 0}
    n = 100_000
    start = time.process_time()
    for _ in range(n):
        t = _ns()
        counts["x"] += _ns() - t
    return (time.process_time() - start) / n / 2


def _timed_mode() -> Any:
    """A bare TorchFunctionMode class that adds up, in `total`, the time of the calls it
    forwards (made in the child, where torch is imported)."""
    from time import thread_time_ns as _ns

    from torch.overrides import TorchFunctionMode

    class Timed(TorchFunctionMode):
        total = 0

        def __torch_function__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            start = _ns()
            out = func(*args, **kwargs) if kwargs else func(*args)
            Timed.total += _ns() - start
            return out

    return Timed


def measure(case: Any, save: str | None, rounds: int, read_cost: float) -> list[str]:
    """The report lines of one model."""
    import torch
    from lens_widget._phases import PH  # type: ignore[import-not-found]

    import lens_widget as lw

    from .real_per_op import Forwarding

    model, args, kwargs = case.model, case.args, case.kwargs
    timed = _timed_mode()

    def in_mode(make: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with make():
                model(*args, **kwargs)

        return run

    runs: dict[str, Callable[[], Any]] = {
        "plain": lambda: model(*args, **kwargs),
        "bare": in_mode(Forwarding),
        "timed": in_mode(timed),
        "trace": lambda: lw.trace(model, args, kwargs, save=save),
    }
    times: dict[str, list[float]] = {k: [] for k in runs}
    phases: list[dict[str, int]] = []
    kernels: list[int] = []
    with torch.no_grad():
        n_ops = len(lw.trace(model, args, kwargs, save=None).ops)
        for run in runs.values():
            run()
        for _ in range(rounds):
            for key, run in runs.items():
                PH.clear()
                timed.total = 0
                gc.collect()
                start = time.process_time()
                result = run()
                times[key].append(time.process_time() - start)
                if key == "trace":
                    result.nodes  # noqa: B018 - the first read fills the records, untimed
                    phases.append(dict(PH))
                elif key == "timed":
                    kernels.append(timed.total)
                del result
    med = {k: statistics.median(v) for k, v in times.items()}
    per_op = 1e6 / n_ops  # seconds -> µs per op

    def median_of(key: str) -> float:
        return statistics.median(p.get(key, 0) for p in phases)

    counts = {k: median_of(k) for k in phases[0] if k.startswith("#")}
    us = {k: median_of(k) / 1e9 * per_op for k in phases[0] if not k.startswith("#")}
    kernel_bare = statistics.median(kernels) / 1e9 * per_op
    kernel_trace = us.pop("[kernel]")
    reads = (
        counts.get("#handler", 0) * 9 + counts.get("#metadata", 0) * 2
        + counts.get("#careful", 0) * 3 + counts.get("#modules", 0) * 4
        + counts.get("#sources", 0) * 2 + counts.get("#identity ops", 0) * 2 + 8
    )  # fmt: skip
    timers = reads * read_cost * per_op
    dispatch = (med["bare"] - med["plain"]) * per_op
    above = (med["trace"] - med["plain"]) * per_op
    counted = sum(v for k, v in us.items() if not k.startswith(_NESTED))
    slowed = kernel_trace - kernel_bare
    lines = [
        f"\n{case.name} save={save!r}: {n_ops} ops ({counts.get('#handler', 0):.0f} through "
        f"the handler, {counts.get('#careful', 0):.0f} of them on the careful path; "
        f"{counts.get('#metadata', 0):.0f} metadata calls; {counts.get('#modules', 0):.0f} "
        f"module calls; {counts.get('#sources', 0):.0f} sources); plain "
        f"{med['plain'] * 1e3:.1f} ms; traced +{above:.1f} µs/op with the clocks in",
        f"  {'dispatch into a mode (bare mode above plain)':52s} {dispatch:6.2f}",
    ]
    for key in sorted(us, key=lambda k: (k.split(":")[0], k)):
        lines.append(f"  {key:52s} {us[key]:6.2f}")
    lines.append(f"  {'torch kernels: under the trace - under a bare mode':52s} {slowed:6.2f}")
    lines.append(f"  {'clock reads themselves (estimated)':52s} {timers:6.2f}")
    rest = above - dispatch - counted - slowed - timers
    lines.append(f"  {'not covered by a timer':52s} {rest:6.2f}")
    return lines


def child(models: list[str], save: str | None, rounds: int, size: str) -> None:
    import torch

    from .real_per_op import model_case

    torch.set_num_threads(1)
    read_cost = _clock_read_cost()
    for name in models:
        print("\n".join(measure(model_case(name, size), save, rounds, read_cost)), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,bert,llama,resnet")
    parser.add_argument("--save", choices=("none", "all"), default="none")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--size", choices=("issue", "bench"), default="issue")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    save = None if args.save == "none" else "all"
    if args.child:
        child(args.models.split(","), save, args.rounds, args.size)
        return
    with tempfile.TemporaryDirectory() as tmp:
        instrumented_copy(Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)])}
        command = [sys.executable, "-m", "bench.trace_phases", "--child", *(argv or sys.argv[1:])]
        subprocess.run(command, env=env, cwd=tmp, check=True)  # its lens_widget first


if __name__ == "__main__":
    main()
