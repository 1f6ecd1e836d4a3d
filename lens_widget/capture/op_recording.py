"""How one call becomes its OpRecord: the outputs read from what it returned, the record's
fields set by name, its outputs noted with the book.

A part of the Recorder (recorder.py), which runs these once per recorded op: the fast path
calls `record` for a call returning one tensor, the careful path `_record_result`.
Written for speed as the rest of the per-op path: a record is made without its __init__.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, cast

import torch

from lens_widget.capture.arguments import slots_of
from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.features import Steps
from lens_widget.capture.func_facts import FACTS, FuncFacts
from lens_widget.capture.input_resolution import Inputs
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.capture.nested_values import Records, is_jagged, record_nested
from lens_widget.capture.op_details import fill_details
from lens_widget.capture.tensor_book import TensorBook, nested_tensor_error
from lens_widget.log.records import UNSET_FLOPS, OpRecord
from lens_widget.log.replay import tensor_leaves

Tensor = torch.Tensor

_new_record = object.__new__
_SCATTER_FACTS = FACTS[torch.as_strided_scatter]


class OpRecording:
    """The Recorder's record making (a base class of it, so the per-op path calls these as
    its own methods)."""

    book: TensorBook
    tracker: ModuleTracker
    ops: list[OpRecord]
    failed: OpRecord | None
    top_frame: FrameType | None
    in_transform: bool
    _steps: Steps
    _note_outputs: Callable[[OpRecord, tuple[Tensor, ...], str, int], None]

    def resolve_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Inputs:
        raise NotImplementedError  # the recorder's

    def _record_failure(
        self, facts: FuncFacts, inputs: Any, writes: Any, err: BaseException, frame: Any
    ) -> None:
        node = self.record(facts, inputs, (), writes, frame)
        node.failed = True
        node.error = f"{type(err).__name__}: {err}"
        self.failed = node

    def _record_result_hooked(
        self,
        facts: FuncFacts,
        inputs: Any,
        writes: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        out: Any,
        frame: Any,
    ) -> Any:
        """_record_result with the features' `replace_outputs` (for these outputs only, not
        a module's identity op) and `result` hooks."""
        steps, ops = self._steps, self.ops
        n_ops = len(ops)
        steps.in_call = True
        try:
            out = self._record_result(facts, inputs, writes, args, kwargs, out, frame)
        finally:
            steps.in_call = False
        node = ops[n_ops] if len(ops) > n_ops else None  # (a write into a view adds a second)
        for hook in steps.results:
            out = hook(node, out)
        return out

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
            if any(t.is_nested for t in outputs) and any(map(is_jagged, outputs)):
                raise nested_tensor_error(next(t for t in outputs if is_jagged(t)))
        else:
            outputs = ()
        if outputs:
            node = self.record(facts, inputs, outputs, writes, frame)
            book = self.book
            if facts.unversioned_alias and type(out) is Tensor:
                book.aliases[id(out)] = (weakref.ref(out), weakref.ref(args[0]))
            elif writes and book.aliases:
                book.note_alias_writes(node, outputs, writes)
            if writes:
                for written in writes:
                    if written._base is not None:
                        self._note_base_written(written, frame)
        return out

    def _note_base_written(self, view: Tensor, frame: Any) -> None:
        """A write into a view changed its base (``cache[i].copy_(x)``), which no call
        returns: the base's new value gets an op of its own, ``as_strided_scatter`` of the
        written view into the base's value before, so later reads of the base (and a module
        returning it) link to the write, and replaying that op gives the value they read."""
        base = view._base
        book = self.book
        if base is None or book.producer_of(base) is None or not base.is_contiguous():
            return  # unknown to the trace, or a layout a contiguous replay would not match
        offset = view.storage_offset() - base.storage_offset()
        args = (base, view, tuple(view.shape), view.stride(), offset)
        inputs = self.resolve_inputs(torch.as_strided_scatter, args, None)
        self.record(_SCATTER_FACTS, inputs, (base,), (), frame)

    def record(
        self,
        facts: FuncFacts,
        inputs: Inputs,
        outputs: tuple[Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord:
        """The op's record. Its links, source line and output metadata are filled after
        the pass (op_details.py), or at once when a save predicate reads each record; its
        label too when labels_later; the ``:1`` of a first pass that repeats later is added
        after the pass. `outside_path`: named after the line that called the module (a
        module's identity op)."""
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
                if len(outputs) > 1:
                    shapes = tuple([tuple(t.shape) for t in outputs])
                    nbytes = sum([t.numel() * t.element_size() for t in outputs])
            except RuntimeError:  # a nested tensor (a fast path's) has no sizes: padded
                if any(t.is_nested for t in outputs):
                    # pyright matches a mixin's Callable attribute to the protocol as if bound
                    recorder = cast(Records, self)
                    return record_nested(
                        recorder, facts, inputs, outputs, writes, frame, outside_path
                    )
                raise
            dtype: torch.dtype | None = first.dtype
            device: torch.device | None = first.device
            grad = first.requires_grad  # kernels differ with it (FLOPs replay it)
        else:
            size, dtype, device, grad = None, None, None, False

        book = self.book
        nodes = book.nodes
        # OpRecord's fields set by name without its __init__ (a keyword call costs ~1 µs
        # more per op): every field, init=False ones too (test_records_by_name checks).
        node = _new_record(OpRecord)
        node.label = ""  # given by the layers (links.py), now or after the pass
        node.kind = "op"
        node.func = facts.name
        node.index = len(nodes)
        node.layer = ""
        node.pass_index = 0
        node.n_passes = 1
        node.module = stack[-1][0] if stack else ""
        node.module_stack = stack
        node.function = ""  # named after the pass, per layer (helper_calls.py)
        if not outputs:  # else shape, dtype and device are filled from the Pending entry
            node.shape = node.dtype = node.device = None
        node.nbytes = nbytes
        node.requires_grad = grad
        node.shapes = shapes
        node.params = params
        # parents, parent_args, from_input, source, source_code: set by fill_details
        node.children = []
        node.feeds_output = False
        node.inplace = bool(writes)
        node.failed = False
        node.error = None
        node.time_ms = None
        node.intervened = False
        node.activations = None
        node.nested_shapes = None  # a nested output's: set by record_nested
        node.replay = (replay, parent_refs)
        node._flops = UNSET_FLOPS
        node._stats = None
        node.grads = None
        nodes.append(node)
        self.ops.append(node)
        if book.labels_later:
            book.pending.append((node, source, size, dtype, device, key))  # pyright: ignore[reportOptionalMemberAccess]  # labels_later implies pending is a list
        else:
            book.layers.place(node, key)
            if book.pending is None:  # a save predicate will read the record: fill it now
                fill_details(book.details, [(node, source, size, dtype, device, None)], None)
            else:
                book.pending.append((node, source, size, dtype, device, None))
        if outputs:
            self._note_outputs(node, outputs, node.layer, node.pass_index)
            if self.in_transform:
                book.note_transform_outputs(node, outputs)
        return node
