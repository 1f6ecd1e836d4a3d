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

from typing import Any, Protocol

import torch

from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.tensor_book import Inputs, TensorBook, nested_tensor_error
from lens_widget.log.nested import padded, sample_shapes
from lens_widget.log.records import OpRecord


class Records(Protocol):
    """What of the recorder (recorder.py, which calls this module) is used here."""

    book: TensorBook

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
    node = recorder.record(facts, inputs, shown, writes, frame, outside_path)
    node.requires_grad = outputs[0].requires_grad  # padded without autograd history
    node.nested_shapes = tuple([sample_shapes(t) if t.is_nested else None for t in outputs])
    book = recorder.book
    for i, tensor in enumerate(outputs):
        if tensor.is_nested:  # the op's reader gets the nested tensor, not the padded copy
            book.point(tensor, node, i)
    return node
