"""Memory per repetition: what repeating a trace, a traced training step, a widget or a
request leaves behind.

Each scenario runs on the 2-layer GPT-2 of issue #25 (`GPT2Config(n_layer=2, n_embd=64,
n_head=4, vocab_size=500)`, train mode, 16 tokens), `warmup` times and then `reps` times.
Per scenario:

- ``rss_kib``: growth of the resident set per repetition, with ``gc.collect()`` before both
  readings: what a user watching the process sees. Memory that only Python's cyclic collector
  frees shows here even when it is freed in the end: it piles up between the collector's
  rare full runs and glibc keeps the heap it grew into;
- ``live_kib``: the same growth with freed heap pages handed back to the OS
  (``malloc_trim``) before both readings: memory still in use;
- ``cyclic_objects``: objects one repetition leaves to the cyclic collector (counted by
  ``gc.collect()`` after repetitions run with the collector off): 0 means everything it
  made was freed the moment it was dropped.

A plain training step (no tracing) is the reference row.

    python -m bench.memory_bench            # 30 warm-up, 300 repetitions per scenario
    python -m bench.memory_bench --quick    # 3 warm-up, 20 repetitions: a smoke run
"""

from __future__ import annotations

import argparse
import gc
import resource
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

import lens_widget as lw

from .measure import run_section, settle

CYCLIC_REPS = 5  # repetitions run with the collector off, for cyclic_objects


def _rss_kib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 1024


@dataclass
class Setup:
    """The model, its inputs, and what the request scenarios start from."""

    model: torch.nn.Module
    ids: torch.Tensor
    log: Any  # a ModelLog of one forward
    other: Any  # a second ModelLog, for compare
    widget: Any  # a LensWidget kept open for the request scenarios
    label: str  # an op of that widget
    folder: str  # where save/load writes


def _setup(folder: str) -> Setup:
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500)
    model = GPT2LMHeadModel(config).train()
    ids = torch.randint(0, 500, (1, 16))
    log, other = lw.trace(model, (ids,)), lw.trace(model, (ids,))
    widget = lw.LensWidget(model, (ids,))
    label = next(op.label for op in widget.model_log.ops if op.func == "linear")
    return Setup(model, ids, log, other, widget, label, folder)


def _request(widget: Any, method: str, params: object) -> None:
    """A request as the frontend sends it; the reply goes to the (closed) comm."""
    content = {"type": "request", "id": 1, "method": method, "params": params}
    widget._on_msg(widget, content, [])


def _plain_step(s: Setup) -> None:
    s.model.zero_grad(set_to_none=True)
    s.model(s.ids, labels=s.ids).loss.backward()


def _traced_step(save: Any) -> Callable[[Setup], None]:
    def step(s: Setup) -> None:
        s.model.zero_grad(set_to_none=True)
        with lw.tracing(s.model, grads=True, save=save):
            s.model(s.ids, labels=s.ids).loss.backward()

    return step


def _widget(make: Callable[[Setup], Any]) -> Callable[[Setup], None]:
    def step(s: Setup) -> None:
        make(s).close()

    return step


def _save_load(s: Setup) -> None:
    s.log.save(s.folder)
    loaded = lw.load(s.folder)
    loaded[s.label].activation.sum()  # read a tensor from the file


def _traced_widget(s: Setup) -> Any:
    return lw.LensWidget(s.model, s.ids)


def _widget_from_log(s: Setup) -> Any:
    return lw.LensWidget.from_log(s.log)


def _compare_widget(s: Setup) -> Any:
    return lw.LensWidget.compare(s.log, s.other)


def _rerun(s: Setup) -> None:
    _request(s.widget, "rerun", {"id": s.label})


def _ablation(s: Setup) -> None:
    _request(s.widget, "ablate", {"id": s.label, "kind": "zero"})
    _request(s.widget, "endAblation", None)


def _trace(s: Setup) -> None:
    lw.trace(s.model, (s.ids,))


# name -> (what one repetition does, the repetition)
SCENARIOS: dict[str, tuple[str, Callable[[Setup], None]]] = {
    "plain_step": ("untraced forward + backward (reference)", _plain_step),
    "trace": ("lw.trace(model, ids)", _trace),
    "tracing_grads": ("lw.tracing(grads=True) + backward, save='all'", _traced_step("all")),
    "tracing_grads_none": ("lw.tracing(grads=True) + backward, save=None", _traced_step(None)),
    "widget": ("LensWidget(model, ids), close()", _widget(_traced_widget)),
    "from_log": ("LensWidget.from_log(log), close()", _widget(_widget_from_log)),
    "compare": ("LensWidget.compare(a, b), close()", _widget(_compare_widget)),
    "rerun": ("a widget's re-run request", _rerun),
    "ablation": ("a widget's ablate + endAblation requests", _ablation),
    "save_load": ("log.save, lw.load, read one tensor", _save_load),
}


@contextmanager
def _collector_off() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def measure(step: Callable[[], Any], warmup: int, reps: int) -> dict[str, float]:
    """The figures of one scenario (see the module doc)."""
    for _ in range(warmup):
        step()
    settle()
    live0 = _rss_kib()
    gc.collect()
    rss0 = _rss_kib()
    for _ in range(reps):
        step()
    gc.collect()
    rss1 = _rss_kib()
    settle()
    live1 = _rss_kib()
    with _collector_off():
        for _ in range(CYCLIC_REPS):
            step()
        cyclic = gc.collect()
    return {
        "rss_kib": (rss1 - rss0) / reps,
        "live_kib": (live1 - live0) / reps,
        "cyclic_objects": cyclic / CYCLIC_REPS,
    }


def bench_memory(
    quick: bool, reps: int | None = None, names: list[str] | None = None, log: Any = print
) -> dict[str, Any]:
    """One row per scenario; `bench.run` reports them as its "memory per repetition"."""
    warmup, reps = (3, reps or 20) if quick else (30, reps or 300)
    log(f"memory per repetition: {warmup} warm-up, {reps} repetitions each")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setup = _setup(folder)
        try:
            for name in names or list(SCENARIOS):
                what, step = SCENARIOS[name]
                row = {"scenario": name, "what": what}
                row |= measure(lambda step=step: step(setup), warmup, reps)
                rows.append(row)
                log(
                    f"  {name:20s} RSS {row['rss_kib']:8.1f} KiB/rep   live "
                    f"{row['live_kib']:8.1f} KiB/rep   cyclic objects {row['cyclic_objects']:7.1f}"
                )
        finally:
            setup.widget.close()
    return {"rows": rows, "warmup": warmup, "reps": reps}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 warm-up, 20 repetitions")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), choices=SCENARIOS)
    return run_section(parser, lambda a: bench_memory(a.quick, a.reps, a.scenarios), argv)


if __name__ == "__main__":
    main()
