"""A call's inputs resolved before it runs: its replay template, each tensor argument's
producer (a source made on first use), and a copy of an argument written since it was
produced.

A part of the TensorBook (tensor_book.py), which the recorder asks once per op: the fast
path `resolve_plain_inputs`, any other call `resolve_any_inputs`. Everything here runs
inside the recorder's bookkeeping, where no torch function reaches a user's mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from lens_widget.capture.arguments import (
    ALL_SLOTS,
    LEAF_TYPES,
    MAX_FAST_ARGS,
    POSITION_TEXT,
    SLOTS,
    is_literal,
    scan_call,
)
from lens_widget.capture.links import ParentRefs
from lens_widget.capture.saved_values import SavedValues
from lens_widget.capture.transforms import is_wrapped, transform_running
from lens_widget.log.records import NodeKind, OpRecord, ParamUse
from lens_widget.log.replay import ReplayCall

Tensor = torch.Tensor
# A call's inputs: its replay template, its tensor arguments' producers, the params it reads
Inputs = tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]]
Parameter = torch.nn.Parameter
_NO_KWARGS: dict[str, Any] = {}  # the kwargs of every replay template without any: read only
_new_object = object.__new__
# What _resolve_tensor returns for a tensor of a torch.func transform (a dict: never literals)
_NOT_PLAIN: Any = {}


class InputResolution:
    """The TensorBook's input resolution (a base class of it, so the recorder's per-op path
    calls these as the book's own methods)."""

    keeps_nothing: bool
    track_versions: bool
    values: SavedValues
    # id(tensor) -> (weakref, node, output index, version when produced)
    _producers: dict[int, tuple[Any, OpRecord, int, int]]

    # id(parameter or buffer) -> (name, kind), of the traced modules (ModelNames.tensors)
    _params: dict[int, tuple[str, str]]

    def _source_for(self, tensor: Tensor, func: Callable[..., Any]) -> tuple[OpRecord, int]:
        raise NotImplementedError  # the book's: a source made on first use

    def add_source(self, tensor: Tensor, kind: NodeKind, name: str, source: int = 0) -> OpRecord:
        raise NotImplementedError  # the book's

    def producer_of(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        raise NotImplementedError  # the book's

    def _version(self, tensor: Tensor) -> int:
        """`tensor`'s version now (torch's counter, or the saved values' own count)."""
        if self.track_versions:
            try:
                return tensor._version
            except RuntimeError:  # an inference tensor made outside the trace
                pass
        return self.values.version(tensor)

    def resolve_plain_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Inputs | None:
        """The call's replay template, its tensor arguments' producers and the params it
        reads (Inputs), for plain tensors and literals (scalars, slices, flat tuples and
        lists of them: shapes, dims, indices), positional or keyword (the hot path; torch's
        Python wrappers such as F.layer_norm pass tensors by keyword); None for any other
        call. One pass over the arguments resolves the tensors and makes the template."""
        if len(args) + (len(kwargs) if kwargs else 0) > MAX_FAST_ARGS:
            return None
        producers = self._producers
        # A known tensor unwritten since it was produced is resolved here, inline (no method
        # call per tensor argument); any other goes through _resolve_tensor.
        unversioned = self.keeps_nothing  # a write matters only to saved values
        tracked = self.track_versions
        parent_refs: ParentRefs = []
        literals: dict[int, Tensor] | None = None
        # positional: the arguments as they are, a slot where a tensor was (made on the
        # first literal after a tensor, or the first tensor after a literal)
        template: list[Any] | None = None
        for i, value in enumerate(args):
            kind = type(value)
            if kind is Tensor or kind is Parameter:
                slot = len(parent_refs)
                entry = producers.get(id(value))
                try:
                    known = (
                        entry is not None
                        and entry[0]() is value
                        and (unversioned or (tracked and value._version == entry[3]))
                    )
                except RuntimeError:  # an inference tensor made outside the trace
                    known = False
                if known:
                    parent_refs.append((POSITION_TEXT[i], entry[1], entry[2]))  # pyright: ignore[reportOptionalSubscript]  # known: entry is set
                else:
                    literals = self._resolve_tensor(
                        func, POSITION_TEXT[i], value, parent_refs, literals
                    )
                    if literals is _NOT_PLAIN:
                        return None
                if template is not None:
                    template[i] = SLOTS[slot]
                elif slot != i:  # literals before it: the template starts here
                    template = list(args)
                    template[i] = SLOTS[slot]
            elif kind in LEAF_TYPES or is_literal(value):
                if template is None and parent_refs:  # tensors before it
                    template = [*SLOTS[: len(parent_refs)], *args[len(parent_refs) :]]
            else:
                return None
        n_positional = len(parent_refs)
        if template is not None:
            args_template: tuple[Any, ...] = tuple(template)
        elif n_positional:  # only tensors: a shared template
            args_template = ALL_SLOTS[n_positional]
        else:
            args_template = args
        kwargs_template = _NO_KWARGS
        if kwargs:
            kwargs_template = dict(kwargs)
            for key, value in kwargs.items():
                kind = type(value)
                if kind is Tensor or kind is Parameter:
                    slot = len(parent_refs)
                    literals = self._resolve_tensor(func, key, value, parent_refs, literals)
                    if literals is _NOT_PLAIN:
                        return None
                    kwargs_template[key] = SLOTS[slot]
                elif kind not in LEAF_TYPES and not is_literal(value):
                    return None
        # ReplayCall(func, args_template, kwargs_template) without its __init__'s frame
        replay = _new_object(ReplayCall)
        replay.func, replay.args, replay.kwargs = func, args_template, kwargs_template
        if literals is not None:
            replay.literals = literals
        return replay, parent_refs, ()  # params: filled after the pass (op_details)

    def _resolve_tensor(
        self,
        func: Callable[..., Any],
        position: str,
        value: Tensor,
        parent_refs: ParentRefs,
        literals: dict[int, Tensor] | None,
    ) -> dict[int, Tensor] | None:
        """Append (position, producer, output index) of a plain tensor argument; the
        literals (a copy of a value no node holds), or _NOT_PLAIN when the tensor belongs to
        a torch.func transform (the careful path records that call)."""
        entry = self._producers.get(id(value))
        if entry is not None and entry[0]() is value:
            if not self.keeps_nothing:  # a write matters only to saved values
                # Written through another view since it was produced (its version moved):
                # no node holds its current value, so the replay keeps a copy.
                try:
                    version = value._version if self.track_versions else self._version(value)
                except RuntimeError:  # an inference tensor made outside the trace
                    version = self._version(value)
                if version != entry[3]:
                    literals = self._literal(literals, len(parent_refs), value)
            parent_refs.append((position, entry[1], entry[2]))
        elif (param := self._params.get(id(value))) is not None and not transform_running():
            # A parameter or buffer of the traced modules, first read (a plain Tensor or
            # Parameter, never a transform's wrapper: not lazy, not wrapped): its source,
            # without _source_for's checks
            node = self.add_source(value, param[1], param[0])  # pyright: ignore[reportArgumentType]  # _params holds (name, kind) with kind a NodeKind
            parent_refs.append((position, node, 0))
        elif is_wrapped(value) or transform_running():
            return _NOT_PLAIN
        else:
            parent, output_index = self._source_for(value, func)
            parent_refs.append((position, parent, output_index))
        return literals

    def resolve_any_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Inputs:
        """resolve_plain_inputs for any call: nested containers, keywords, Tensor subclasses."""
        args_template, kwargs_template, found = scan_call(args, kwargs)
        parent_refs: ParentRefs = []
        literals: dict[int, Tensor] | None = None
        for slot, (position, tensor) in enumerate(found):
            parent_and_index = self.producer_of(tensor)
            if parent_and_index is not None:
                parent, output_index = parent_and_index
                version = self._producers[id(tensor)][3]
                if not self.keeps_nothing and version != self._version(tensor):
                    literals = self._literal(literals, slot, tensor)
            else:
                parent, output_index = self._source_for(tensor, func)
            parent_refs.append((position, parent, output_index))
        replay = ReplayCall(func, args_template, kwargs_template)
        if literals is not None:
            replay.literals = literals
        return replay, parent_refs, ()  # params: filled after the pass (op_details)

    @staticmethod
    def _literal(
        literals: dict[int, Tensor] | None, slot: int, tensor: Tensor
    ) -> dict[int, Tensor]:
        """Written through another view since it was produced: keep its value now."""
        with torch.no_grad():
            copy = tensor.detach().clone()
        if literals is None:
            return {slot: copy}
        literals[slot] = copy
        return literals
