"""An op's recorded call with its saved input values put back: what replays start from."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from lens_widget.log.nested import renested_output
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import ReplayCall, fill_template


class InputNotSaved(LookupError):
    """An input of the op was not saved, so its call cannot be rebuilt."""

    def __init__(self, label: str) -> None:
        super().__init__(f"input {label!r} was not saved")
        self.label = label


class SavedCall(NamedTuple):
    call: ReplayCall
    args: Any
    kwargs: dict[str, Any]
    tensors: list[torch.Tensor]  # the value in each tensor slot


def saved_call(node: OpRecord, *, copy: bool) -> SavedCall:
    """(call, args, kwargs, slot values) of `node` with each tensor argument's saved value in
    its slot.

    `copy=True` clones every tensor, so a replayed in-place op cannot write into the log.
    Raises InputNotSaved, or ValueError for a node without a callable recorded call (a
    loaded log's op whose function is not one a loaded log may call).
    """
    call, parent_refs = node.replay if node.replay is not None else (None, [])
    if call is None:
        raise ValueError(f"no call was recorded for {node.label}")
    if call.unavailable is not None:
        raise ValueError(call.unavailable)
    tensors: list[torch.Tensor] = []
    for slot, (_, parent, output_index) in enumerate(parent_refs):
        value = call.literals.get(slot)
        if value is None:
            if parent.activations is None:
                raise InputNotSaved(parent.label)
            value = parent.activations[output_index]
            if parent.nested_shapes is not None:  # saved padded: the op read it nested
                tensors.append(renested_output(value, parent.nested_shapes, output_index))
                continue
        tensors.append(value.clone() if copy else value)
    return SavedCall(
        call, fill_template(call.args, tensors), fill_template(call.kwargs, tensors), tensors
    )
