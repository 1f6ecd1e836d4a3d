"""A traced step's statistics computed on a second thread while the step runs.

Summarising every op's output and gradient after the step (one batch, log/stats.py) reads
every saved byte once more on the training thread: on a narrow model that is a third of a
plain step. `BackgroundStats` is a Feature (features.py) of the step's trace: each value the
trace keeps (an op's first output as it is saved, an op's or a parameter's gradient as the
backward hands it over) is handed to a worker thread, which summarises it while the
training thread goes on (torch's and numpy's reductions release the GIL). The worker takes
what it was handed every `_PAUSE` seconds and when the step ends, not as each value comes:
every time it takes the GIL the training thread waits for it, and its Python between the
reductions is kept short for the same reason (``HostMoments.unguarded``).

After the step, `stats_of` takes a worker's result only where the log still holds that very
tensor and its version counter has not moved since the worker read it; anything else (a
value the trace copied before a write, one the worker does not take, a gradient summed over
passes) is summarised then, in one batch, as before. The statistics are therefore those of
the values the log holds after the step, equal to the batch's.

The worker takes only what `HostMoments` summarises (float32/float64 CPU tensors), whose
statistics do not depend on the batch they are computed in. It pays only with a core to
spare (`core_to_spare`): where torch's own threads take every core, the worker and torch's
thread pool would take turns on them, and on 2 cores a monitored step of the bench's narrow
GPT-2 took 2.0x a plain one against 1.6x with the batch after the step.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence

import numpy as np
import torch

from lens_widget.capture.features import Feature
from lens_widget.log.host_moments import HostMoments
from lens_widget.log.records import OpRecord
from lens_widget.log.stats import ActivationStats, activation_stats, host_stats, values_key

Tensor = torch.Tensor
# id(tensor) -> (the tensor, its version when the worker read it, its statistics); the
# tensor is held so that no other tensor takes its id or memory before the step ends
Summaries = dict[int, tuple[Tensor, int, ActivationStats]]
# values_key -> (the version read, its statistics): a view of values summarised before
ByValues = dict[tuple[object, ...], tuple[int, ActivationStats]]
# Seconds the worker sleeps between takes (3 to 30 ms gave the same step within the noise:
# docs/tracing-cost.md, twelfth session)
_PAUSE = 0.01


def core_to_spare() -> bool:
    """torch's intra-op threads leave a core of this process's free for the worker."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return torch.get_num_threads() < cores


def _version(tensor: Tensor) -> int | None:
    """The write counter, None for a tensor without one (an inference tensor)."""
    try:
        return tensor._version
    except RuntimeError:
        return None


class BackgroundStats(Feature):
    """Hands each saved first output and each op gradient to a worker thread (module doc).
    The hooks only append: on the fast path they run where the trace's mode is active, so
    every check that reads the tensor is the worker's."""

    def __init__(self) -> None:
        # A deque, not a queue: appending wakes no one. The worker wakes every _PAUSE
        # seconds and takes what is there (waking it per value cost the training thread a
        # GIL handoff per value), and at once when the step ends.
        self._queue: deque[Tensor] = deque()
        self._ended = threading.Event()
        self._done: Summaries = {}
        self._thread = threading.Thread(
            target=_summarise,
            args=(self._queue, self._ended, self._done),
            name="lens_widget stats",
            daemon=True,
        )
        self._thread.start()

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        saved = node.activations
        if saved:
            self._queue.append(saved[0])

    def grad_noted(self, grad: Tensor) -> None:
        self._queue.append(grad)

    def finish(self) -> Summaries:
        """Wait for the worker to summarise what was handed over; its summaries."""
        self._ended.set()
        self._thread.join()
        return self._done


def _summarise(work: deque[Tensor], ended: threading.Event, done: Summaries) -> None:
    """The worker: every _PAUSE seconds, and once `ended` is set, summarise each tensor
    handed over that HostMoments takes. A view holding the same values as one summarised
    before (same memory and layout, same version) takes its summary, as the batch's
    values_key does."""
    by_values: ByValues = {}
    host = HostMoments()  # its buffers kept from one tensor to the next
    with np.errstate(over="ignore", invalid="ignore"):  # host_stats': Inf/NaN, slow path
        while True:
            last = ended.wait(_PAUSE)  # set: nothing more is handed over
            while work:
                _summarise_one(work.popleft(), host, by_values, done)
            if last:
                return


def _summarise_one(
    tensor: Tensor,
    host: HostMoments,
    by_values: ByValues,
    done: Summaries,
) -> None:
    if id(tensor) in done or not HostMoments.accepts(tensor):
        return
    version = _version(tensor)
    if version is None:
        return
    key = values_key(tensor)
    same = by_values.get(key)
    if same is not None and same[0] == version:
        done[id(tensor)] = (tensor, version, same[1])
        return
    try:
        if tensor.is_contiguous() and tensor.numel():
            stats = host_stats(tensor, host)
        else:
            stats = activation_stats([tensor])[0]
    except Exception:  # noqa: BLE001  # left to the batch after the step, which reports it
        return
    by_values[key] = (version, stats)
    done[id(tensor)] = (tensor, version, stats)


def stats_of(tensors: Sequence[Tensor], done: Summaries) -> list[ActivationStats]:
    """activation_stats(tensors), taking the worker's summary of a tensor the log still
    holds unwritten since the worker read it; the rest in one batch."""
    found: list[ActivationStats | None] = []
    missing: list[Tensor] = []
    for tensor in tensors:
        entry = done.get(id(tensor))
        if entry is not None and entry[0] is tensor and _version(tensor) == entry[1]:
            found.append(entry[2])
        else:
            found.append(None)
            missing.append(tensor)
    rest = iter(activation_stats(missing))
    return [stats if stats is not None else next(rest) for stats in found]
