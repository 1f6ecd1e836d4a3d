"""What each part of a traced op costs, found by taking it away: the traced forward with one
part of lens_widget's per-op path replaced by the least a tracer could do there.

    python -m bench.trace_ablation [--models gpt2,bert,llama,resnet] [--rounds 41] [--save none|all]
                                   [--size issue|bench] [--device cpu|cuda]

The models of `bench.real_per_op` (issue sizes unless `--size bench`, one thread,
`torch.no_grad()`). Times are this process's CPU time; on `--device cuda` they are wall time
with the device synchronised before each clock read (the GPU's work is no CPU time). Per round,
in an order shuffled by round, after `gc.collect()`: a plain forward, the bare mode, the
rows floor and the log-rows floor (`bench.tracers`), and the forward of a trace (its
`Session` made and started before the clock, finished after it) whole and under each
stand-in:

- *record as a row*: `Recorder.record` appends one tuple (the call, its inputs, call path,
  module stack, output metadata) and notes the outputs' producers, as the pass of a
  rows-then-records design would: no OpRecord, pending entry or saved values;
- *no module calls*: the module tracker's enter and exit do nothing (no stack, no module
  outputs, no identity ops);
- *no call site*: `find_call_site` returns a constant (no frame walk);
- *resolve as the floor's*: a call's inputs resolved as the log-rows floor does (each tensor's
  producer looked up, a source row on first use, a template), without lens_widget's
  records of sources, literals or version checks;
- *all four*.

Printed per model: each run's time above the same round's plain forward, median over
rounds in µs per op (`bench.measure.per_op_above`), and per stand-in the change against the
whole trace, paired by round, with its 95% bootstrap interval (`bench.measure.paired_change`;
negative: the stand-in is cheaper). The logs these
stand-ins make are wrong: only the forward is timed, and whatever their finish raises is
dropped. The stand-ins are put back after every run.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch

import lens_widget as lw
from lens_widget.capture import input_resolution, module_tracker, op_recording
from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.session import Session

from .device import DEVICES, pick_device, synced_clock
from .measure import median, paired_change, per_op_above, with_fixed_allocator
from .real_per_op import MODELS, Forwarding, model_case
from .tracers import KeepLogRows, KeepRows

Tensor, Parameter = torch.Tensor, torch.nn.Parameter
Clock = Callable[[], float]


class _Row:
    """What stands in for a record where the per-op path reads one (a module output's
    producer is checked against the index its call began at; the modules' op counts read
    the module stacks): its fields, then what a record is made of."""

    __slots__ = ("module_stack", "index", "made_of")


def _row_record(self: Any, facts: Any, inputs: Any, outputs: Any, writes: Any, frame: Any,
                outside_path: bool = False) -> _Row:  # fmt: skip
    replay, parent_refs, _ = inputs
    tracker = self.tracker
    site, source = find_call_site(frame, outside_path, self.top_frame)
    row = _Row()
    row.module_stack = tracker.stack
    row.index = len(self.book.nodes)
    first = outputs[0] if outputs else None
    meta = () if first is None else (first.shape, first.dtype, first.device, first.requires_grad)
    row.made_of = (facts, replay, parent_refs, site, source, tracker.path, meta, writes)
    self.book.nodes.append(row)
    self.ops.append(row)
    producers = self.book._producers
    for i, tensor in enumerate(outputs):
        producers[id(tensor)] = (weakref.ref(tensor), row, i, -1)
    return row


def _floor_producer(book: Any, value: Tensor) -> Any:
    producers = book._producers
    entry = producers.get(id(value))
    if entry is not None and entry[0]() is value:
        return entry[1]
    row = _Row()
    row.module_stack = ()
    row.index = len(book.nodes)
    row.made_of = (value.shape, value.dtype, value.device, value.requires_grad)
    producers[id(value)] = (weakref.ref(value), row, 0, -1)
    book.nodes.append(row)
    return row


def _floor_resolve(self: Any, func: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
    refs: list[Any] = []
    template = list(args)
    for i, value in enumerate(args):
        if type(value) is Tensor or type(value) is Parameter:
            template[i] = None
            refs.append(_floor_producer(self, value))
    kwargs_template = None
    if kwargs:
        kwargs_template = dict(kwargs)
        for key, value in kwargs.items():
            if type(value) is Tensor or type(value) is Parameter:
                kwargs_template[key] = None
                refs.append(_floor_producer(self, value))
    return (tuple(template), kwargs_template), refs, ()


def _no_call_site(frame: Any, outside_path: bool = False, stop: Any = None) -> tuple[int, int]:
    return 1, 0


def _enter_nothing(self: Any, module: Any, args: Any, kwargs: Any) -> None:
    return None


def _exit_nothing(self: Any, output: Any) -> Any:
    return output


# stand-in name -> (object, attribute, what stands in)
_STAND_INS: dict[str, list[tuple[Any, str, Any]]] = {
    "record as a row": [(op_recording.OpRecording, "record", _row_record)],
    "no module calls": [
        (module_tracker.ModuleTracker, "enter", _enter_nothing),
        (module_tracker.ModuleTracker, "exit", _exit_nothing),
    ],
    "no call site": [(op_recording, "find_call_site", _no_call_site)],
    "resolve as the floor's": [
        (input_resolution.InputResolution, "resolve_plain_inputs", _floor_resolve)
    ],
}
VARIANTS: dict[str, tuple[str, ...]] = {
    "trace": (),
    **{name: (name,) for name in _STAND_INS},
    "all four": tuple(_STAND_INS),
}


@contextlib.contextmanager
def ablated(names: tuple[str, ...]) -> Iterator[None]:
    """The stand-ins `names` in place, put back on exit."""
    patches = [patch for name in names for patch in _STAND_INS[name]]
    originals = [getattr(owner, attribute) for owner, attribute, _ in patches]
    try:
        for owner, attribute, stand_in in patches:
            setattr(owner, attribute, stand_in)
        yield
    finally:
        for (owner, attribute, _), original in zip(patches, originals, strict=True):
            setattr(owner, attribute, original)


def _traced_forward(
    model: Any, args: Any, kwargs: Any, stand_ins: tuple[str, ...], save: Any, clock: Clock
) -> float:
    with ablated(stand_ins):
        names = ModelNames(model)
        session = Session(names, model, "model", save=save, timing=False, intervene=None)
        session.add_inputs(args, kwargs)
        session.start()
        start = clock()
        try:
            output = model(*args, **kwargs)
        except BaseException as err:
            session.finish(None, err)  # puts back what the trace put in place
            raise
        elapsed = clock() - start
        with contextlib.suppress(Exception):  # a stand-in's log may not build (put back first)
            session.finish(output, None)
    return elapsed


def _in_mode(model: Any, args: Any, kwargs: Any, mode: Any, clock: Clock) -> float:
    with mode:
        start = clock()
        model(*args, **kwargs)
        return clock() - start


def measure(
    name: str, rounds: int, save: str | None, size: str = "issue", device: str = "cpu"
) -> tuple[int, dict[str, list[float]]]:
    """(ops of the trace, {run: seconds per round})."""
    where = pick_device(device)
    case = model_case(name, size).to(where)
    model, args, kwargs = case.model, case.args, case.kwargs
    keep = save == "all"
    clock = synced_clock(where)
    runs: dict[str, Callable[[], float]] = {
        "plain": lambda: _in_mode(model, args, kwargs, contextlib.nullcontext(), clock),
        "bare mode": lambda: _in_mode(model, args, kwargs, Forwarding(), clock),
        "rows floor": lambda: _in_mode(model, args, kwargs, KeepRows(keep), clock),
        "log-rows floor": lambda: _in_mode(model, args, kwargs, KeepLogRows(keep), clock),
    }
    for variant, names in VARIANTS.items():
        runs[variant] = lambda names=names: _traced_forward(model, args, kwargs, names, save, clock)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            n_ops = len(lw.trace(model, args, kwargs, save=save).ops)
            for run in runs.values():
                run()
            times: dict[str, list[float]] = {run: [] for run in runs}
            for i in range(rounds):
                order = list(runs)
                random.Random(i).shuffle(order)
                for run in order:
                    gc.collect()
                    times[run].append(runs[run]())
    finally:
        torch.set_num_threads(threads)
    return n_ops, times


def main(argv: list[str] | None = None) -> None:
    with_fixed_allocator("bench.trace_ablation", argv)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--save", choices=("none", "all"), default="none")
    parser.add_argument("--size", choices=("issue", "bench"), default="issue")
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    opts = parser.parse_args(argv)
    save = None if opts.save == "none" else "all"
    for name in opts.models.split(","):
        n_ops, times = measure(name, opts.rounds, save, opts.size, opts.device)
        print(
            f"{name} ({opts.size} size, {opts.device}) save={save}: {n_ops} ops, "
            f"plain {median(times['plain']) * 1e3:.1f} ms; "
            f"µs/op above plain, median of {opts.rounds} rounds; change against the trace, "
            "95% interval"
        )
        for run, (above, _) in per_op_above(times, n_ops).items():
            line = f"  {run:24s} {above:7.1f}"
            if run in VARIANTS and run != "trace":
                change, low, high = paired_change(times, n_ops, run, "trace")
                line += f"   {change:+6.1f} [{low:+.1f}, {high:+.1f}]"
            print(line, flush=True)


if __name__ == "__main__":
    main()
