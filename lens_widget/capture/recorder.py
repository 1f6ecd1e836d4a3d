"""The TorchFunctionMode that records every torch call of a forward pass.

A mode (rather than only a Tensor subclass) also sees factory calls such as
``torch.arange`` that take no tensor, and never changes the type of the user's tensors.

Everything here runs once per op, so it is written for speed: per-function facts are
cached, a call site is an int, a record is made without its __init__ (its fields set by
name), its links, source text and metadata are filled after the pass (op_details.py), and
saving a value appends to a list. The map of one op's path is Recorder's docstring.

A user's own mode or Tensor subclass around the trace sees exactly the calls of a plain
forward: the bookkeeping runs with torch functions disabled, except on the fast path, where
no mode is active and every argument is a plain tensor or a literal (a scalar, a shape, a
slice), so nothing it calls can reach one.
Nothing here reads a tensor's values (no device synchronisation).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.call_state import autocast_state, keep_rng_state
from lens_widget.capture.checkpoint_bookkeeping import is_checkpoint_bookkeeping
from lens_widget.capture.features import (
    NOT_HANDLED,
    BackwardRunner,
    CallInterceptor,
    Feature,
    Steps,
)
from lens_widget.capture.func_facts import FACTS, FuncFacts, may_write
from lens_widget.capture.import_time import IMPORTS_RUNNING, run_by_torch_import
from lens_widget.capture.input_resolution import Inputs
from lens_widget.capture.links import Layer
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_outputs import ModuleOutputs
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.op_recording import OpRecording
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.capture.section_inputs import SectionInputs
from lens_widget.capture.tensor_book import (
    TensorBook,
    UninitializedInput,
)
from lens_widget.capture.transforms import QuietInTransform, transform_running
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import ReplayCall

Tensor = torch.Tensor

_NO_KWARGS: dict[str, Any] = {}  # read only
_any_autocast = torch._C._is_any_autocast_enabled
_mode_stack_depth = torch._C._len_torch_function_stack


class Recorder(OpRecording, TorchFunctionMode):
    """Records each torch call as an OpRecord; sources are created on first use.

    What runs per op (``__torch_function__``), in order; the collaborators are members,
    the optional features are attached by composition (`attach`, features.py):

    1. **hook entry**: torch calls the mode with (func, types, args, kwargs).
    2. **facts**: ``FACTS[func]`` (func_facts.py), the function's cached facts. A metadata
       call (``Tensor.shape``, ``dim``...) is passed through, not recorded.
    3. **path**: the *fast path* when no user mode is around the trace, no feature asks
       every call careful (`careful`), no torch.func transform runs, nothing may be
       written, and every argument is a plain tensor or a literal; else the *careful path*
       (`_call_quietly`): the bookkeeping runs with torch functions disabled (`quiet`), and
       a backward call goes to the backward capture (`backward_capture`).
    4. **inputs resolved** (before the call: an in-place op moves versions): the book
       (``book``, tensor_book.py) gives the replay template and each tensor argument's
       producer, making source nodes on first use (`add_source`; features:
       ``source_added``).
       Then the RNG state of a random call and the autocast state are kept (call_state.py);
       on the careful path, saved values about to be overwritten are copied (`_before_call`).
    5. **call**: the torch call itself. Features: ``call`` (timing), careful path only.
       If it raises, the op is recorded as failed (`_record_failure`) and the error goes
       on to the user's code.
    6. **record** (`record`): the OpRecord, fields set by name; its layer key from the
       module tracker's path (``tracker``, module_tracker.py) and the call site
       (call_site.py); label, links, source line and output metadata are filled after the
       pass, or at once when a save predicate reads records (op_details.py).
    7. **outputs noted**: features ``replace_outputs`` (interventions, careful path), then
       the book notes each output's producer and keeps the saved values (save_policy.py),
       then features ``outputs_noted`` (gradients; saved values to disk, offload.py; the
       place for a monitor's per-op statistics). On the careful path, features
       ``result`` then see the value the user's code gets (timing, interventions).
    8. **module outputs**: when a module call returns, the tracker calls
       ``module_outputs`` (module_outputs.py), which notes the nodes it returned (an
       untouched tensor gets an identity op, recorded through steps 4, 6 and 7). Features:
       ``module_output`` (interventions).

    A feature's hooks are bound once when it is attached: a step no feature hooks calls the
    book's own method, so absent features cost nothing per op. Steps 6 and 7 (the record
    made, its outputs noted) are OpRecording's (op_recording.py). The log is built from the
    recorder after the pass (build_log.py).
    """

    lens_widget_own_mode = True  # torch's fast-path checks look past it (fast_paths.py)

    def __init__(
        self,
        names: ModelNames,
        root: torch.nn.Module | None,
        save: SavePolicy,
        track_versions: bool,
        section: bool = False,
    ) -> None:
        """`root`: the traced model (its calls are the whole log), None for a section of
        several models or none. `section`: code around the modules is recorded too, and
        tensors it gets from before are named inputs (section_inputs.py)."""
        TorchFunctionMode.__init__(self)
        # Which node made each tensor, the saved values, the records made so far
        self.book = book = TensorBook(names, save, track_versions)
        self._resolve_plain = book.resolve_plain_inputs  # (bound once: read per op)
        self.save = save
        self.names = names
        self.ops: list[OpRecord] = []  # the nodes of kind "op", in order
        self.failed: OpRecord | None = None
        # A section's opening frame: its ops outside any module have call paths up to it.
        self.top_frame: FrameType | None = None
        outer_call = None
        if section:
            inputs = SectionInputs(book, names)
            book.outside_input = inputs.free_input
            outer_call = inputs.on_outer_call
        self.module_outputs = outputs = ModuleOutputs(book, self)
        self.tracker = book.tracker = ModuleTracker(
            root, names, outputs.on_output, book.nodes, self.ops, outer_call
        )
        # Bookkeeping runs inside this: invisible to the user's modes and Tensor subclasses.
        # Entered only by the handler, which torch never re-enters while it is active.
        self.quiet = torch._C.DisableTorchFunction()
        self.quiet_in_transform = QuietInTransform(self.quiet)
        # Layers that ran more than once (their first pass is renamed after the pass)
        self.repeated: list[Layer] = book.layers.repeated
        # A recorder without features keeping all values or none: nothing reads a label
        # during the pass, so layers and labels are given after it (op_details.py).
        book.labels_later = save.keeps_all or save.keeps_nothing
        # A torch.func transform is running: its ops take the careful path (transforms.py)
        self.in_transform = False
        # Set when the trace keeps gradients: runs each backward call (backward_capture.py).
        self.backward_capture: BackwardRunner | None = None
        # Set inside torch.distributed: sees each careful call first (distributed_capture.py)
        self.distributed: CallInterceptor | None = None
        self.features: list[Feature] = []  # in the order attached: their hooks run so
        self._bind(Steps(book, ()))

    def attach(self, feature: Feature) -> None:
        """Plug `feature` into the per-op path (before the recording starts); its hooks run
        after those of the features attached before it."""
        self.features.append(feature)
        if feature.reads_labels:  # then the labels are given as the nodes are made
            self.book.labels_later = False
        self._bind(Steps(self.book, self.features))

    def _bind(self, steps: Steps) -> None:
        """The hookable steps: the book's own methods, or composed with the features'."""
        book = self.book
        self._steps = steps
        self._note_outputs = steps.note_outputs if steps.hooks_outputs else book.note_outputs
        self._call = steps.call
        self._wraps_result = steps.wraps_result
        # Every call careful: a feature asks it, or a transform runs (see _call_quietly)
        self.careful = steps.careful or self.in_transform
        book.source_hooks = steps.source_added
        self.grad_hooks = steps.grad_noted  # the backward capture calls them
        outputs = self.module_outputs
        outputs.hooks = steps.module_output
        hooked = outputs.on_output_with_hooks if steps.module_output else outputs.on_output
        self.tracker.on_module_output = hooked

    # ---- the hook --------------------------------------------------------------------

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        facts = FACTS[func]
        if facts.metadata:
            return func(*args, **kwargs) if kwargs else func(*args)
        frame = sys._getframe(1)
        if IMPORTS_RUNNING and run_by_torch_import(frame):  # torch's lazy import (import_time.py)
            return func(*args, **kwargs) if kwargs else func(*args)
        # The fast path: plain tensors and literals (scalars, shapes, dims, slices; see
        # TensorBook.resolve_plain_inputs), no user mode around the trace.
        # Then no call made by the bookkeeping can reach a mode or a Tensor subclass, and it
        # runs without DisableTorchFunction.
        if (
            facts.special
            or _mode_stack_depth()
            or self.careful
            or ((kwargs or facts.writes_by_flag) and may_write(facts, args, kwargs))
        ):
            return self._call_quietly(facts, func, args, kwargs, frame)
        # Inputs are resolved before the call: an in-place op changes their versions.
        inputs = self._resolve_plain(func, args, kwargs)
        if inputs is None:
            return self._call_quietly(facts, func, args, kwargs, frame)
        if facts.random and not self.book.keeps_nothing:
            keep_rng_state(facts, args, kwargs, inputs[0])
        if _any_autocast():
            inputs[0].autocast = autocast_state()
        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                self._record_failure(facts, inputs, (), err, frame)
            raise
        if type(out) is not Tensor:
            with self.quiet:
                return self._record_result(facts, inputs, (), args, kwargs, out, frame)
        self.record(facts, inputs, (out,), (), frame)
        return out

    def _call_quietly(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any:
        """Any call: keywords, containers, Tensor subclasses, writes, a user's mode around
        the trace. The bookkeeping runs with torch functions disabled."""
        if facts.backward and self.backward_capture is not None:
            return self.backward_capture.run(facts, func, args, kwargs, frame)
        if facts.checkpoint_bookkeeping and is_checkpoint_bookkeeping(frame):
            return func(*args, **kwargs) if kwargs else func(*args)  # not the model's op
        if self.distributed is not None:  # engine bookkeeping and collectives
            out = self.distributed.intercept(facts, func, args, kwargs, frame)
            if out is not NOT_HANDLED:
                return out
        quiet = self.quiet
        if self.in_transform or transform_running():  # a torch.func transform (transforms.py)
            self.in_transform = self.careful = True
            quiet = self.quiet_in_transform
        try:
            with quiet:
                # Inputs are resolved before the call: an in-place op changes their versions.
                inputs = self.resolve_inputs(func, args, kwargs)
                writes = self._before_call(facts, args, kwargs, inputs[0])
                if _any_autocast():
                    inputs[0].autocast = autocast_state()
        except UninitializedInput:  # a lazy module's parameter gets its data
            return self.book.materialize(func, args, kwargs)
        try:
            out = self._call(func, args, kwargs)
        except BaseException as err:
            with quiet:
                self._record_failure(facts, inputs, writes, err, frame)
            raise
        with quiet:
            if self._wraps_result:
                out = self._record_result_hooked(facts, inputs, writes, args, kwargs, out, frame)
            else:
                out = self._record_result(facts, inputs, writes, args, kwargs, out, frame)
            if self.in_transform and not transform_running():
                self.in_transform = False  # back to the fast path, unless a feature says
                self.careful = self._steps.careful
            return out

    def resolve_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Inputs:
        """The call's replay template, its tensor arguments' producers, the params it reads
        (the book's)."""
        inputs = self._resolve_plain(func, args, kwargs)
        return inputs if inputs is not None else self.book.resolve_any_inputs(func, args, kwargs)

    def _before_call(
        self, facts: FuncFacts, args: tuple[Any, ...], kwargs: Any, replay: ReplayCall
    ) -> list[Tensor]:
        """For calls that may write or draw random numbers: copy saved values about to be
        overwritten, keep the RNG state; the tensors the call writes."""
        writes = facts.mutation.targets(args, kwargs or _NO_KWARGS)
        keeps_nothing = self.book.keeps_nothing
        if writes and not keeps_nothing:  # nothing saved: no copy, no version to keep
            self.book.values.before_write(writes)
        if facts.random and not keeps_nothing:
            keep_rng_state(facts, args, kwargs, replay)
        return writes
