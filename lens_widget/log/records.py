"""One record per node of a traced forward pass: sources, operations and outputs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import torch

from lens_widget.log.replay import ReplayCall

NodeKind = Literal["input", "param", "buffer", "const", "op", "output"]


class ParamUse(NamedTuple):
    """A parameter or buffer an op read directly (e.g. the weight of a linear)."""

    name: str
    shape: tuple[int, ...]
    numel: int


class ParentArg(NamedTuple):
    """Where a parent's tensor sat among the op's arguments ("0", "1.2", "bias")."""

    parent: str
    position: str
    output_index: int = 0


@dataclass
class ModuleInfo:
    """A module that ran during the trace."""

    address: str
    class_name: str
    parent: str | None
    n_passes: int = 0
    n_ops: int = 0
    # Labels of the nodes that produced each pass's outputs (pass -> labels).
    outputs: dict[int, list[str]] = field(default_factory=dict)


# slots: one record per op is made while the model runs; slotted ones are built faster.
@dataclass(eq=False, slots=True)
class OpRecord:
    """A node of the log. Operations have kind "op"; sources and sinks share the shape.

    `label` is unique and stable across runs of the same code, e.g. ``linear_2_7:3``
    (the 2nd distinct linear layer, 7th layer overall, its 3rd pass). `layer` is the
    label without the pass, the node that the rolled view folds passes into.
    """

    label: str
    kind: NodeKind
    func: str
    index: int
    layer: str
    pass_index: int = 1
    n_passes: int = 1
    module: str = ""
    module_stack: tuple[tuple[str, int], ...] = ()
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    device: str | None = None
    nbytes: int = 0
    shapes: tuple[tuple[int, ...], ...] = ()
    params: tuple[ParamUse, ...] = ()
    parents: list[str] = field(default_factory=list)
    parent_args: list[ParentArg] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    from_input: bool = False
    feeds_output: bool = False
    source: str = ""
    source_code: str = ""
    inplace: bool = False
    failed: bool = False
    error: str | None = None
    activations: tuple[torch.Tensor, ...] | None = None
    # What validate() needs to replay the op: the call (None for an output sink) and, per
    # tensor argument, (position, the node that produced it, which of its outputs).
    replay: tuple[ReplayCall | None, list[ParentRef]] | None = None

    @property
    def activation(self) -> torch.Tensor | None:
        """The op's (first) output tensor as it was when produced, or None when not saved."""
        return self.activations[0] if self.activations else None

    @property
    def saved(self) -> bool:
        return self.activations is not None

    @property
    def pass_label(self) -> str:
        """The module pass an op ran in, e.g. ``encoder.layer.3:1``; "" outside modules."""
        if not self.module_stack:
            return ""
        address, pass_index = self.module_stack[-1]
        return f"{address}:{pass_index}"

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.shape)) if self.shape is not None else "-"
        where = f" in {self.module}" if self.module else ""
        return f"<{self.kind} {self.label}: {self.func} -> {shape} {self.dtype or ''}{where}>"


# (argument position, the node that produced the tensor, which of its outputs)
ParentRef = tuple[str, OpRecord, int]


def index_by_label(nodes: Iterable[OpRecord]) -> dict[str, OpRecord]:
    """label -> record; ModelLog keeps one, for builders called without it."""
    return {node.label: node for node in nodes}
