"""Recording an op that returned a nested tensor (torch.nested): one node, its value padded.

Only torch's fast paths make them inside a forward (fast_paths.py): ``_nested_tensor_from_mask``
packs a padded batch, ``_transformer_encoder_layer_fwd`` runs a layer on it,
``to_padded_tensor`` unpacks it. A strided nested tensor has no sizes, so the recorder hands
such a call here when reading its output's shape raises (no cost for other ops): the node is
recorded with its outputs padded (shape, saved value, statistics: log/nested.py), says each
sample's shape (``nested_shapes``), and the nested tensors themselves read as its outputs, so
the ops that take them link to it. Runs inside the recorder's handler, where no mode sees
these calls (quiet on the careful path; on the fast path no mode is active).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.input_resolution import Inputs
from lens_widget.capture.tensor_book import TensorBook, nested_tensor_error
from lens_widget.log.nested import padded, sample_shapes
from lens_widget.log.records import OpRecord


class Records(Protocol):
    """What of the recorder (recorder.py, which calls this module) is used here."""

    book: TensorBook
    # the book's note_outputs, or the features' composed with it (Recorder._bind)
    _note_outputs: Callable[[OpRecord, tuple[torch.Tensor, ...], str, int], None]

    def record(
        self,
        facts: FuncFacts,
        inputs: Inputs,
        outputs: tuple[torch.Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord: ...


Tensor = torch.Tensor


def is_jagged(tensor: Tensor) -> bool:
    """A nested tensor of torch.nested's jagged layout (its own Tensor subclass, whose shape
    holds a symbolic length): the log cannot describe it."""
    return tensor.is_nested and tensor.layout is not torch.strided


def nested_intervention_error(target: str, where: str) -> TypeError:
    """An intervention on a nested output: refused (its samples have different shapes, and
    the value an intervention sees and returns is one padded tensor)."""
    return TypeError(
        f"lens_widget: intervene[{target!r}]: the output of {where} is a nested tensor "
        "(torch's nested-tensor fast path: nn.TransformerEncoder in eval, without grad, with a "
        "src_key_padding_mask), which an intervention cannot replace; intervene on a plain "
        "output (the encoder's own), or run the slow path (train mode, or grad enabled)"
    )


def record_nested(
    recorder: Records,
    facts: FuncFacts,
    inputs: Inputs,
    outputs: tuple[Tensor, ...],
    writes: Any,
    frame: Any,
    outside_path: bool,
) -> OpRecord:
    """`recorder.record` for a call some of whose `outputs` are strided nested tensors."""
    jagged = next((t for t in outputs if is_jagged(t)), None)
    if jagged is not None:
        raise nested_tensor_error(jagged)
    shown = tuple([padded(t) if t.is_nested else t for t in outputs])
    shapes = tuple([sample_shapes(t) if t.is_nested else None for t in outputs])
    note_outputs = recorder._note_outputs

    def note_nested(node: OpRecord, kept: tuple[Tensor, ...], base: str, passes: int) -> None:
        node.nested_shapes = shapes  # before a save predicate or a feature reads the record
        note_outputs(node, kept, base, passes)

    recorder._note_outputs = note_nested  # for this call only
    try:
        node = recorder.record(facts, inputs, shown, writes, frame, outside_path)
    finally:
        recorder._note_outputs = note_outputs
    node.requires_grad = outputs[0].requires_grad  # padded without autograd history
    if node.intervened and outputs[0].is_nested:  # its padded value was given to the function
        raise nested_intervention_error(node.layer, f"op {node.label}")
    book = recorder.book
    for i, tensor in enumerate(outputs):
        if tensor.is_nested:  # the op's reader gets the nested tensor, not the padded copy
            book.point(tensor, node, i)
    return node
