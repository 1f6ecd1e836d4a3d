"""Does tracing make the host wait for the GPU? Counts synchronising CUDA calls per pass.

    python -m bench.host_sync [--models gpt2,resnet50] [--size bench|tiny]

A synchronising call (`.item()`, a device-to-host copy, `nonzero`) stalls the launch queue:
one per op would turn a GPU pass into a series of round trips. torch reports each one when
`torch.cuda.set_sync_debug_mode("warn")` is on; this counts them for the plain forward,
`trace(save=None)` and `trace(save="all")`, and names the lens_widget lines that make them.
On a CPU-only machine it says so and exits.
"""

from __future__ import annotations

import argparse
import collections
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import torch

import lens_widget as lw
from model_zoo import BENCH_MODELS, ZooCase

_PACKAGE = "/lens_widget/"


def count_syncs(call: Callable[[], Any]) -> tuple[int, collections.Counter[str]]:
    """How many synchronising CUDA calls `call` made, and lens_widget's lines among them."""
    places: collections.Counter[str] = collections.Counter()
    total = 0
    shown = warnings.showwarning

    def note(message: Any, category: Any, *rest: Any, **kw: Any) -> None:
        nonlocal total
        if "synchronizing" not in str(message):
            return shown(message, category, *rest, **kw)
        total += 1
        ours = [f for f in traceback.extract_stack() if _PACKAGE in f.filename]
        if ours:
            frame = ours[-1]
            places[f"{frame.filename.split(_PACKAGE)[-1]}:{frame.lineno} {frame.name}"] += 1
        return None

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = note
        torch.cuda.set_sync_debug_mode("warn")
        try:
            call()
            torch.cuda.synchronize()
        finally:
            torch.cuda.set_sync_debug_mode("default")
            warnings.showwarning = shown
    return total, places


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,resnet50")
    parser.add_argument("--size", default="bench", choices=("bench", "tiny"))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench.host_sync needs a CUDA device; none is available here")
    _probe()
    for name in args.models.split(","):
        _report(BENCH_MODELS[name](args.size).to(torch.device("cuda")))  # type: ignore[arg-type]
        torch.cuda.empty_cache()


class _OneItem(torch.nn.Module):
    """A model that synchronises once per pass (`.item()`): the count must see it traced too."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.sum().item()


def _probe() -> None:
    model, x = _OneItem(), torch.ones(4, device="cuda")
    plain, _ = count_syncs(lambda: model(x))
    traced, _ = count_syncs(lambda: lw.trace(model, (x,)))
    if traced == 0:
        seen = "NOT SEEN: the counts below miss syncs"
    elif traced < plain:  # seen on an H200, torch 2.11: plain 2, traced 1
        seen = "seen, fewer than plain: the traced counts below are a lower bound"
    else:
        seen = "seen"
    print(f"probe, one .item() per pass: plain {plain}, traced {traced} ({seen})")


def _report(case: ZooCase) -> None:
    """Prints the synchronising calls of one model's plain and traced passes."""
    model, inputs, kwargs = case.model, case.args, case.kwargs
    with torch.no_grad():
        model(*inputs, **kwargs)  # warm-up: lazy initialisations synchronise once
        n_ops = len(lw.trace(model, inputs, kwargs, save=None).ops)
        rows = {
            "plain": lambda: model(*inputs, **kwargs),
            "trace(save=None)": lambda: lw.trace(model, inputs, kwargs, save=None),
            'trace(save="all")': lambda: lw.trace(model, inputs, kwargs),
        }
        print(f"{case.name} on {torch.cuda.get_device_name()}: {n_ops} ops")
        for label, call in rows.items():
            total, places = count_syncs(call)
            print(f"  {label:20s} {total:5d} synchronising calls")
            for place, count in places.most_common(8):
                print(f"      {count:5d}  {place}")


if __name__ == "__main__":
    main()
