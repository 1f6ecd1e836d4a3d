"""Recorders of a trace that keeps gradients (``trace(..., backward=fn)``, a section with
``grads=True``).

Subclasses, so a trace without gradients pays nothing: here each recorded output that
requires grad, each source that is an autograd leaf and each op's tensor inputs (for the
outputs of custom autograd.Functions) are noted for the backward capture, which the
recorder runs every backward call through (backward_capture.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from lens_widget.capture.instrumented_recorder import InstrumentedRecorder
from lens_widget.capture.links import ParentRefs
from lens_widget.capture.recorder import Recorder
from lens_widget.log.records import NodeKind, OpRecord, ParamUse
from lens_widget.log.replay import ReplayCall, tensor_leaves

Tensor = torch.Tensor
Parameter = torch.nn.Parameter


class GradNotes(Recorder):
    """Notes outputs and leaves for the backward capture; mixed into a recorder class."""

    def _note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        super()._note_outputs(node, outputs, base, passes)
        capture = self.backward_capture
        if capture is not None:
            for tensor in outputs:
                if tensor.requires_grad:
                    capture.note(node, outputs)
                    break

    def _resolve_plain_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]] | None:
        inputs = super()._resolve_plain_inputs(func, args, kwargs)
        capture = self.backward_capture
        if inputs is not None and capture is not None:
            values = (*args, *kwargs.values()) if kwargs else args
            capture.note_inputs([v for v in values if type(v) is Tensor or type(v) is Parameter])
        return inputs

    def _resolve_any_inputs(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> tuple[ReplayCall, ParentRefs, tuple[ParamUse, ...]]:
        inputs = super()._resolve_any_inputs(func, args, kwargs)
        capture = self.backward_capture
        if capture is not None:
            capture.note_inputs(tensor_leaves((args, kwargs or {})))
        return inputs

    def add_source(self, tensor: Tensor, kind: NodeKind, name: str, source: int = 0) -> OpRecord:
        node = super().add_source(tensor, kind, name, source)
        capture = self.backward_capture
        if capture is not None and tensor.requires_grad and tensor.grad_fn is None:
            capture.leaf(tensor, source=node)
        return node


class GradRecorder(GradNotes, Recorder):
    """A plain recorder that keeps gradients."""


class InstrumentedGradRecorder(GradNotes, InstrumentedRecorder):
    """A timed or intervened recorder that keeps gradients."""


def grad_recorder(plain: type[Recorder]) -> type[Recorder]:
    """The gradient-keeping version of a recorder class."""
    if issubclass(plain, InstrumentedRecorder):
        return InstrumentedGradRecorder
    return GradRecorder
