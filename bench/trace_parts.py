"""A trace's fixed costs on real models: each part of `lw.trace` timed on its own.

    python -m bench.trace_parts [--models gpt2,bert,llama,resnet] [--rounds 25]

The models of `bench.real_per_op` (issue sizes, `torch.no_grad()`, one thread). Per round,
after `gc.collect()`: a plain forward, then one trace taken apart as `lw.trace` runs it
(`ModelNames`, the `Session`, its inputs, `start`, the forward, `finish`) and the first read of
`log.nodes`, which fills a plain trace's records. Printed: the median wall time of each part
in ms. Everything but the forward is paid once per trace, whatever the op count: at these
sizes it is several µs per op (docs/tracing-cost.md, "Per-trace costs").
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.session import Session

from .real_per_op import MODELS, model_case

PARTS = ("plain", "names", "session", "inputs", "start", "forward", "finish", "first read")


def trace_steps(case: Any, held: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """The PARTS as calls, in order: a plain forward, then one trace taken apart as
    `lw.trace` runs it; `held` keeps what one part hands the next."""
    model, args, kwargs = case.model, case.args, case.kwargs

    def session() -> Session:
        names = held["names"]
        return Session(names, model, type(model).__name__, save=None, timing=False, intervene=None)

    return {
        "plain": lambda: model(*args, **kwargs),
        "names": lambda: held.setdefault("names", ModelNames(model)),
        "session": lambda: held.setdefault("session", session()),
        "inputs": lambda: held["session"].add_inputs(args, kwargs),
        "start": lambda: held["session"].start(),
        "forward": lambda: held.setdefault("output", model(*args, **kwargs)),
        "finish": lambda: held.setdefault("log", held["session"].finish(held["output"], None)),
        "first read": lambda: held["log"].nodes,
    }


def measure(name: str, rounds: int) -> dict[str, float]:
    """{part: median ms} over `rounds` rounds."""
    case = model_case(name)
    clock = time.perf_counter
    times: dict[str, list[float]] = {part: [] for part in PARTS}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            for _ in range(rounds + 1):  # the first round warms up
                steps = trace_steps(case, {})
                for part in PARTS:
                    if part in ("plain", "names"):
                        gc.collect()  # before the forward and before the trace
                    start = clock()
                    steps[part]()
                    times[part].append(clock() - start)
                del steps
    finally:
        torch.set_num_threads(threads)
    return {part: statistics.median(values[1:]) * 1e3 for part, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=25)
    opts = parser.parse_args(argv)
    print(f"1 thread, wall time, median ms of {opts.rounds} rounds")
    print(f"{'model':8s}" + "".join(f"{part:>12s}" for part in PARTS))
    for name in opts.models.split(","):
        medians = measure(name, opts.rounds)
        print(f"{name:8s}" + "".join(f"{medians[part]:12.3f}" for part in PARTS))


if __name__ == "__main__":
    main()
