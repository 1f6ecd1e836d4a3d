"""Where does `lens_widget.trace` spend its time beyond the plain forward?

    python -m bench.profile_trace resnet50 [--save all|none] [--runs 5] [--threads 1]

Samples `trace()` with pyinstrument over several runs and prints, per function, the share of
trace time spent in it and in what it calls (inclusive) and in its own body (self), for
lens_widget code; plus torch's own kernels (the forward itself) for scale.
"""

from __future__ import annotations

import argparse
import pathlib
import time
from collections import defaultdict
from typing import Any

import torch
from pyinstrument import Profiler

import lens_widget
from model_zoo import BENCH_MODELS, chain


def _key(frame: Any) -> str:
    path = frame.file_path or ""
    path = path[path.rindex("lens_widget") :] if "lens_widget" in path else pathlib.Path(path).name
    return f"{path}:{frame.function}"


def _walk(frame: Any, incl: dict[str, float], self_t: dict[str, float], stack: set[str]) -> None:
    if frame.is_synthetic:  # pyinstrument's "[self]" leaves: counted via their parent
        return
    key = _key(frame)
    if key not in stack:  # count recursion once
        incl[key] += frame.time
    self_t[key] += frame.total_self_time
    for child in frame.children:
        _walk(child, incl, self_t, stack | {key})


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("model", help=f"one of {', '.join(BENCH_MODELS)}, or chainN (N ops)")
    p.add_argument("--save", default="all", choices=["all", "none"])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--quick", action="store_true", help="the tiny size of the model")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    if args.model.startswith("chain"):
        case = chain(int(args.model[5:]))
    else:
        case = BENCH_MODELS[args.model]("tiny" if args.quick else "bench")
    save = "all" if args.save == "all" else None
    with torch.no_grad():
        case.model(*case.args, **case.kwargs)
        lens_widget.trace(case.model, case.args, case.kwargs, save=save)
        t0 = time.perf_counter()
        for _ in range(args.runs):
            case.model(*case.args, **case.kwargs)
        plain = (time.perf_counter() - t0) / args.runs
        profiler = Profiler(interval=0.0005)
        profiler.start()
        t0 = time.perf_counter()
        for _ in range(args.runs):
            lens_widget.trace(case.model, case.args, case.kwargs, save=save)
        traced = (time.perf_counter() - t0) / args.runs
        profiler.stop()

    session = profiler.last_session
    root = session.root_frame()
    incl: dict[str, float] = defaultdict(float)
    self_t: dict[str, float] = defaultdict(float)
    _walk(root, incl, self_t, set())
    total = root.time
    print(
        f"{case.name}: plain {plain * 1e3:.1f} ms, trace(save={save!r}) {traced * 1e3:.1f} ms "
        f"({traced / plain:.2f}x; profiler on)"
    )
    print(f"\n{'inclusive %':>11} {'self %':>7}  function")
    ours = [k for k in incl if k.startswith("lens_widget")]
    for key in sorted(ours, key=lambda k: -incl[k])[: args.top]:
        print(f"{100 * incl[key] / total:10.1f}% {100 * self_t[key] / total:6.1f}%  {key}")
    print("\ntop self time anywhere:")
    for key in sorted(self_t, key=lambda k: -self_t[k])[: args.top]:
        print(f"{100 * self_t[key] / total:10.1f}%  {key}")


if __name__ == "__main__":
    main()
