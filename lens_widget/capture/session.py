"""One recording: a recorder and its module tracker around some code, and the log it leaves.

Shared by ``lw.trace`` (the code is one call of the model) and ``lw.tracing`` (the code is
the body of a ``with`` block). `start` sets up the world the code runs in; `finish` puts it
back exactly as it was (also when the code raised), builds the ModelLog, warns about save
names that matched nothing and reports intervention targets that matched nothing.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from types import FrameType
from typing import Any

import torch

from lens_widget.capture.backward.backward_capture import BackwardCapture
from lens_widget.capture.build_log import SectionTop, build_log
from lens_widget.capture.dispatch.dispatch_hooks import DispatchHooks
from lens_widget.capture.distributed.distributed_capture import (
    DistributedCapture,
    distributed_active,
)
from lens_widget.capture.fast_paths import FastPaths, unkept_fast_paths
from lens_widget.capture.features import Feature
from lens_widget.capture.interventions.intervening import Intervening
from lens_widget.capture.interventions.interventions import InterventionFn, Interventions
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.named_leaves import named_arguments
from lens_widget.capture.new_parameters import ParameterWatch
from lens_widget.capture.offload.offload import Offload, OffloadSpec
from lens_widget.capture.old_generation import (
    collect_young_generations,
    promote_to_old_generation,
)
from lens_widget.capture.partial_log import attach_partial_log
from lens_widget.capture.python_wrappers import PythonWrappers
from lens_widget.capture.recorder import Recorder
from lens_widget.capture.recursion import recursion_headroom
from lens_widget.capture.save_policy import SavePolicy, SaveSpec
from lens_widget.capture.tensor_book import nested_tensor_error
from lens_widget.capture.timing.op_timing import Timing
from lens_widget.log.gc_pause import gc_paused
from lens_widget.log.model_log import ModelLog

# Frames the tracer adds at the deepest point of a forward (the mode's handler and what it
# calls); module calls add none, so this much headroom keeps a plain forward's depth.
_EXTRA_FRAMES = 64


class Session:
    """Records every torch call made on this thread between `start` and `finish`.

    `names` names the modules, parameters and buffers of the traced modules; `root` is the
    module whose calls are the whole log ("" in ``log.modules``), None for a section of
    several modules or none; `section` (the top level of a section, else None) makes the
    code around module calls recorded at the top level, and tensors from before it inputs.
    """

    def __init__(
        self,
        names: ModelNames,
        root: torch.nn.Module | None,
        model_class: str,
        *,
        save: SaveSpec,
        timing: bool,
        intervene: Mapping[str, InterventionFn] | None,
        section: SectionTop | None = None,
        grads: bool = False,
        offload: OffloadSpec | None = None,
        wrappers: list[torch.nn.Module] | None = None,
        features: Sequence[Feature] = (),
        copy_sources: bool = True,
    ) -> None:
        self.model_class = model_class
        self.section = section
        self.policy = policy = SavePolicy(save)
        self._contexts = ExitStack()  # gc pause and recursion headroom: start to finish
        self._recording = ExitStack()  # tracker and recorder: start to the end of the code
        self._start = 0.0
        # Fast paths of torch this trace cannot keep as an untraced run takes them
        self.notes = unkept_fast_paths(names.roots)
        self._quiet = quiet = torch._C.DisableTorchFunction()  # setup: invisible to user modes
        with quiet:
            track_versions = not torch.is_inference_mode_enabled()
            self.interventions: Interventions | None = None
            if intervene is not None:
                self.interventions = Interventions(intervene, names.modules.values())
            self.recorder = recorder = Recorder(
                names, root, policy, track_versions, section is not None
            )
            recorder.book.values.copy_sources = copy_sources
            # The optional features, in the order their hooks run (features.py); a trace
            # without them pays nothing for them.
            if timing:
                recorder.attach(Timing())
            if self.interventions is not None:
                recorder.attach(Intervening(self.interventions, recorder.book))
            # Runs each backward call made while recording; fills the log's gradients.
            self.backward: BackwardCapture | None = None
            if grads:
                self.backward = recorder.backward_capture = BackwardCapture(recorder)
                recorder.attach(self.backward)
            # Saved values past the memory budget go to disk (offload.py)
            self.offload: Offload | None = None
            if offload is not None and not policy.keeps_nothing:
                self.offload = Offload(recorder.book, offload, set(names.tensors))
                recorder.attach(self.offload)
                if self.backward is not None:  # op gradients under the same budget
                    self.backward.keep_grad = self.offload.put_item
            # A dispatched model's device hooks (accelerate) run unrecorded: log.dispatch
            self._dispatch = DispatchHooks(recorder)
            # Inside torch.distributed: engine calls, collectives, sharded parameters
            self.distributed: DistributedCapture | None = None
            if distributed_active():
                self.distributed = DistributedCapture(recorder, names, wrappers or [])
                recorder.attach(self.distributed)
                recorder.distributed = self.distributed
                recorder.tracker.see_through = frozenset(map(id, wrappers or []))
            for feature in features:  # the caller's own (lw.Monitor's), last
                recorder.attach(feature)

    def add_inputs(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """The traced call's arguments: sources ``input.0``, ``input.attention_mask``..."""
        book = self.recorder.book
        with self._quiet:
            for name, tensor in named_arguments(args, dict(kwargs)):
                if tensor.is_nested:  # before anything runs: nothing to put back
                    raise nested_tensor_error(tensor)
                if book.producer_of(tensor) is None:  # passed twice: one input
                    book.add_source(tensor, "input", name)

    def start(self, top_frame: FrameType | None = None) -> None:
        """From here on, this thread's torch calls and module calls are recorded.
        `top_frame`: the frame running a section's code (its ops' call paths end there)."""
        contexts = self._contexts
        collect_young_generations()  # before the pause: see old_generation.py
        contexts.enter_context(gc_paused())
        contexts.enter_context(recursion_headroom(_EXTRA_FRAMES))
        try:
            self.recorder.top_frame = top_frame
            self._recording.enter_context(self.recorder.tracker)
            self._recording.enter_context(ParameterWatch(self.recorder.book))
            self._recording.enter_context(self.recorder)
            self._recording.enter_context(PythonWrappers())
            self._recording.enter_context(FastPaths())
            self._recording.enter_context(self._dispatch)
            if self.distributed is not None:
                self._recording.enter_context(self.distributed)
        except BaseException:
            self._recording.close()
            contexts.close()
            raise
        self._start = time.perf_counter()

    def finish(self, output: Any, error: BaseException | None, stacklevel: int = 1) -> ModelLog:
        """Stop recording and put the world back; the log. Raises only when `error` is None
        and an intervention target matched nothing (the log is at ``self.log`` then).
        `stacklevel`: of the user's code, counted from the caller (for warnings)."""
        try:
            try:
                if self.distributed is not None:
                    self.distributed.finish()
                self._recording.close()
            finally:
                self.recorder.top_frame = None  # holds the section's frame, and its locals
                # A bound method of the section's inputs, which hold the recorder: a cycle
                # that would keep the saved tensors until the cyclic collector runs.
                self.recorder.book.outside_input = None
            elapsed = time.perf_counter() - self._start
            offload_error = None
            if self.offload is not None:
                offload_error = self.offload.finish()  # the values written put in place
            with self._quiet:
                self.log = log = build_log(
                    self.recorder, self.model_class, output, error, elapsed,
                    section=self.section, section_on_read=self._nothing_reads_records(),
                    stacklevel=stacklevel + 1,
                )  # fmt: skip
                log.dispatch = self._dispatch.calls
                if self.backward is not None:
                    self.backward.finish(log)  # and drops its references to the autograd graph
                if self.distributed is not None:
                    self.distributed.fill_log(log)
            if self.offload is not None:
                log.disk_values = self.offload.disk
            log.notes = list(self.notes)
            if error is None:  # a partial log may sit in a cycle with its error: leave it young
                # Before the collector resumes: its first young collection would scan them.
                promote_to_old_generation()
        finally:
            self._contexts.close()
        self._warn_on_unmatched_save_names(stacklevel + 1)
        for note in self.notes:
            warnings.warn(f"lens_widget: {note}", stacklevel=stacklevel + 1)
        if offload_error is not None:
            if error is not None:  # the forward's own error goes on, told of this one
                with contextlib.suppress(Exception):  # a class that refuses notes
                    error.add_note(f"lens_widget: {offload_error}")
            else:
                attach_partial_log(offload_error, log)
                raise offload_error
        if error is None and self.interventions is not None:
            known = {n.label for n in log.ops} | {n.layer for n in log.ops} | set(log.modules)
            unmatched = self.interventions.unmatched_error(known)
            if unmatched is not None:
                raise unmatched
        return log

    def _nothing_reads_records(self) -> bool:
        """Nothing reads the records as the section ends: no feature but the gradients'
        (which name them once filled: backward_capture.py), no save names to check."""
        policy = self.policy
        features = self.recorder.features
        return (policy.keeps_all or policy.keeps_nothing) and all(
            feature is self.backward for feature in features
        )

    def _warn_on_unmatched_save_names(self, stacklevel: int) -> None:
        policy, log = self.policy, self.log
        if not policy.names:
            return
        names = {n.label for n in log.nodes} | {n.layer for n in log.nodes}
        names |= {n.func for n in log.ops} | set(log.modules)
        names |= {f"{a}:{p}" for a, m in log.modules.items() for p in range(1, m.n_passes + 1)}
        unmatched = policy.unmatched(names)
        if unmatched:
            warnings.warn(
                f"lens_widget: save names {unmatched[:5]} match no op label, layer, function or "
                "module of this model; nothing was saved for them",
                stacklevel=stacklevel + 1,
            )
