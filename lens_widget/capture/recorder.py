"""The TorchFunctionMode that records every torch call of a forward pass.

A mode (rather than only a Tensor subclass) also sees factory calls such as
``torch.arange`` that take no tensor, and never changes the type of the user's tensors.

Everything here runs once per op, so it is written for speed: per-function facts are
cached, a call site is an int, records are built positionally and complete (labels, links,
source text; only the first pass of a repeating layer is renamed afterwards, links.py),
and saving a value appends to a list. Which node made each tensor: tensor_book.py; what
each module call returned: module_outputs.py.

A user's own mode or Tensor subclass around the trace sees exactly the calls of a plain
forward: the bookkeeping runs with torch functions disabled, except on the fast path, where
no mode is active and every argument is a plain tensor or a literal (a scalar, a shape, a
slice), so nothing it calls can reach one.
Nothing here reads a tensor's values (no device synchronisation).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.arguments import slots_of
from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.call_state import autocast_state, keep_rng_state
from lens_widget.capture.func_facts import FACTS, FuncFacts
from lens_widget.capture.links import Layer, ParentRefs
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_outputs import ModuleOutputs
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.op_details import fill_details
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.capture.section_inputs import SectionInputs
from lens_widget.capture.tensor_book import (
    TensorBook,
    UninitializedInput,
    nested_tensor_error,
)
from lens_widget.capture.transforms import QuietInTransform, transform_running
from lens_widget.log.records import OpRecord, ParamUse
from lens_widget.log.replay import ReplayCall, tensor_leaves

Tensor = torch.Tensor

_NO_KWARGS: dict[str, Any] = {}  # read only
_UNLINKED: tuple[()] = ()  # parents and parent_args of a record until fill_details
_any_autocast = torch._C._is_any_autocast_enabled
_mode_stack_depth = torch._C._len_torch_function_stack


def _may_write(facts: FuncFacts, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
    """An `out=` or `inplace=True` argument (F.relu(x, inplace=True), torch.add(a, b, out=c)),
    or a norm updating its running statistics (batch_norm in training)."""
    if kwargs and ("out" in kwargs or kwargs.get("inplace") is True):
        return True
    position = facts.inplace_position
    if position is not None and len(args) > position and args[position] is True:
        return True
    rule = facts.mutation
    return rule.running_stats is not None and bool(rule.targets(args, kwargs or _NO_KWARGS))


class BackwardRunner(Protocol):
    """Runs the backward calls of a trace that keeps gradients (backward_capture.py)."""

    def run(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: Any,
    ) -> Any: ...


class Recorder(TensorBook, ModuleOutputs, TorchFunctionMode):
    """Records each torch call as an OpRecord; sources are created on first use."""

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
        TensorBook.__init__(self, names, save.keeps_nothing, track_versions, save.asks_predicate)
        self.save = save
        self.names = names
        self.ops: list[OpRecord] = []  # the nodes of kind "op", in order
        self.failed: OpRecord | None = None
        # A section's opening frame: its ops outside any module have call paths up to it.
        self.top_frame: FrameType | None = None
        outer_call = None
        if section:
            inputs = SectionInputs(self, names)
            self.outside_input = inputs.free_input
            outer_call = inputs.on_outer_call
        self.tracker = ModuleTracker(root, names, self._on_module_output, self.ops, outer_call)
        # Bookkeeping runs inside this: invisible to the user's modes and Tensor subclasses.
        # Entered only by the handler, which torch never re-enters while it is active.
        self.quiet = torch._C.DisableTorchFunction()
        self.quiet_in_transform = QuietInTransform(self.quiet)
        # (module path, function, call path) -> its layer; layers that ran more than once
        self._layers: dict[Any, Layer] = self.layers.by_key
        self.repeated: list[Layer] = self.layers.repeated
        # A plain recorder keeping all values or none: nothing reads a label during the
        # pass, so layers and labels are given after it (op_details.py).
        self.labels_later = type(self) is Recorder and (save.keeps_all or save.keeps_nothing)
        # (module address, pass, the nodes that produced that module call's output tensors)
        self.module_outputs: list[tuple[str, int, list[OpRecord]]] = []
        # id(x.data) -> (weakref to it, weakref to x): a write through it changes x too.
        self._aliases: dict[int, tuple[Any, Any]] = {}
        # Set when the trace keeps gradients: runs each backward call (backward_capture.py).
        self.backward_capture: BackwardRunner | None = None

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
        # The fast path: plain tensors and literals (scalars, shapes, dims, slices; see
        # TensorBook._resolve_plain_inputs), no user mode around the trace.
        # Then no call made by the bookkeeping can reach a mode or a Tensor subclass, and it
        # runs without DisableTorchFunction.
        if (
            facts.special
            or _mode_stack_depth()
            or self.in_transform
            or ((kwargs or facts.writes_by_flag) and _may_write(facts, args, kwargs))
        ):
            return self._call_quietly(facts, func, args, kwargs, frame)
        # Inputs are resolved before the call: an in-place op changes their versions.
        inputs = self._resolve_plain_inputs(func, args, kwargs)
        if inputs is None:
            return self._call_quietly(facts, func, args, kwargs, frame)
        if facts.random and not self.keeps_nothing:
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
        self._record(facts, inputs, (out,), (), frame)
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
        quiet = self.quiet
        if self.in_transform or transform_running():  # a torch.func transform (transforms.py)
            self.in_transform = True
            quiet = self.quiet_in_transform
        try:
            with quiet:
                # Inputs are resolved before the call: an in-place op changes their versions.
                inputs = self._resolve_inputs(func, args, kwargs)
                writes = self._before_call(facts, args, kwargs, inputs[0])
                if _any_autocast():
                    inputs[0].autocast = autocast_state()
        except UninitializedInput:  # a lazy module's parameter gets its data
            return self.materialize(func, args, kwargs)
        try:
            out = self._call(func, args, kwargs)
        except BaseException as err:
            with quiet:
                self._record_failure(facts, inputs, writes, err, frame)
            raise
        with quiet:
            out = self._record_result(facts, inputs, writes, args, kwargs, out, frame)
            if self.in_transform and not transform_running():
                self.in_transform = False  # back to the fast path
            return out

    def _call(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Any:
        """The torch call itself, on the careful path (a timed trace times it)."""
        return func(*args, **kwargs) if kwargs else func(*args)

    def _record_failure(
        self, facts: FuncFacts, inputs: Any, writes: Any, err: BaseException, frame: Any
    ) -> None:
        node = self._record(facts, inputs, (), writes, frame)
        node.failed = True
        node.error = f"{type(err).__name__}: {err}"
        self.failed = node

    def _record_result(
        self,
        facts: FuncFacts,
        inputs: Any,
        writes: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        out: Any,
        frame: Any,
    ) -> Any:
        """Record a call that returned `out` (if it returned tensors); give `out` back."""
        if type(out) is Tensor:
            outputs: tuple[Tensor, ...] = (out,)
        elif out is None and facts.name == "__setitem__":
            outputs = (args[0],)  # x[i] = v: the op's result is the written tensor
        elif out is None and writes:
            # Wrote its arguments and returned nothing (torch._fused_adam_): what it wrote is
            # its result, so later reads of those tensors link to it.
            outputs = tuple(writes)
            inputs[0].written_slots = slots_of(args, kwargs, writes)
        elif isinstance(out, (tuple, list, Tensor)):
            outputs = tuple(tensor_leaves(out))
            if any(t.is_nested for t in outputs):  # torch.nested's jagged tensors
                raise nested_tensor_error(next(t for t in outputs if t.is_nested))
        else:
            outputs = ()
        if outputs:
            node = self._record(facts, inputs, outputs, writes, frame)
            if facts.unversioned_alias and type(out) is Tensor:
                self._aliases[id(out)] = (weakref.ref(out), weakref.ref(args[0]))
            elif writes and self._aliases:
                self._note_alias_writes(node, outputs, writes)
        return out

    def _note_alias_writes(self, node: OpRecord, outputs: Any, writes: list[Tensor]) -> None:
        """A write through `x.data` changed x, which no version shows: x's value is now this
        op's output, so later reads of x link here."""
        for written in writes:
            entry = self._aliases.get(id(written))
            base = entry[1]() if entry is not None and entry[0]() is written else None
            index = next((i for i, t in enumerate(outputs) if t is written), None)
            if base is not None and index is not None:
                self.point(base, node, index)

    def _before_call(
        self, facts: FuncFacts, args: tuple[Any, ...], kwargs: Any, replay: ReplayCall
    ) -> list[Tensor]:
        """For calls that may write or draw random numbers: copy saved values about to be
        overwritten, keep the RNG state; the tensors the call writes."""
        writes = facts.mutation.targets(args, kwargs or _NO_KWARGS)
        if writes and not self.keeps_nothing:  # nothing saved: no copy, no version to keep
            self.values.before_write(writes)
        if facts.random and not self.keeps_nothing:
            keep_rng_state(facts, args, kwargs, replay)
        return writes

    def _record(
        self,
        facts: FuncFacts,
        inputs: tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]],
        outputs: tuple[Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord:
        """The op's record. Its links, source line and output metadata are filled after
        the pass (op_details.py), or at once when a save predicate reads each record; its
        label too in a plain trace (labels_later); the ``:1`` of a first pass that repeats
        later is added after the pass."""
        replay, parent_refs, params = inputs
        tracker = self.tracker
        site, source = find_call_site(frame, outside_path, self.top_frame)
        key = (tracker.path, facts.name, site)
        stack = tracker.stack
        shapes: tuple[tuple[int, ...], ...] = ()  # one output: filled with its shape later
        nbytes = 0
        if outputs:
            first = outputs[0]
            try:
                size: torch.Size | None = first.shape
            except RuntimeError:  # a strided nested tensor has no sizes
                if first.is_nested:
                    raise nested_tensor_error(first) from None
                raise
            dtype: torch.dtype | None = first.dtype
            device: torch.device | None = first.device
            grad = first.requires_grad  # kernels differ with it (FLOPs replay it)
            if len(outputs) > 1:
                shapes = tuple([tuple(t.shape) for t in outputs])
                nbytes = sum([t.numel() * t.element_size() for t in outputs])
        else:
            size, dtype, device, grad = None, None, None, False

        node = OpRecord(
            "", "op", facts.name, len(self.nodes), "", 0, 1,
            stack[-1][0] if stack else "", stack, None, None, None, nbytes, grad, shapes,
            params, _UNLINKED, _UNLINKED, [], False, False, "", "", bool(writes),  # type: ignore[arg-type]
            False, None, None, False, None, (replay, parent_refs),
        )  # fmt: skip
        self.nodes.append(node)
        self.ops.append(node)
        if self.labels_later:
            self.pending.append((node, source, size, dtype, device, key))  # type: ignore[union-attr]
        else:
            self.layers.place(node, key)
            if self.pending is None:  # a save predicate will read the record: fill it now
                fill_details(self, [(node, source, size, dtype, device, None)])
            else:
                self.pending.append((node, source, size, dtype, device, None))
        if outputs:
            self._note_outputs(node, outputs, node.layer, node.pass_index)
            if self.in_transform:
                self.note_transform_outputs(node, outputs)
        return node

    def _note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        """Producers of the op's output tensors, and the outputs kept if the policy says so."""
        if self.keeps_nothing:  # versions matter only to saved values
            for i, tensor in enumerate(outputs):
                self._producers[id(tensor)] = (weakref.ref(tensor), node, i, -1)
            return
        if len(outputs) == 1:  # the common case, without a loop
            tensor = outputs[0]
            try:
                versions: Any = tensor._version if self.track_versions else -1
            except RuntimeError:  # an inference tensor
                versions = -1
            if versions < 0:
                versions = self.values.version(tensor)
            self._producers[id(tensor)] = (weakref.ref(tensor), node, 0, versions)
        else:
            versions = tuple([self._version(t) for t in outputs])
            for i, tensor in enumerate(outputs):
                self._producers[id(tensor)] = (weakref.ref(tensor), node, i, versions[i])
        save = self.save
        if save.keeps_all:
            if len(outputs) == 1 and not tensor.requires_grad and type(tensor) is Tensor:
                node.activations = outputs  # SavedValues.keep, inlined for the common case
                self.values.saved.append((node, outputs, versions))
            else:
                self.values.keep(node, outputs, versions)
        else:
            # A name list or a predicate sees the label with its pass, also on a first pass.
            label, node.label = node.label, f"{base}:{passes}"
            keep = save.keeps(node)
            node.label = label
            if keep:
                self.values.keep(node, outputs, versions)
