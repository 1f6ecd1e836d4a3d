"""One record per node of a traced forward pass: sources, operations and outputs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Literal, NamedTuple

import torch

from lens_widget.log.flops import op_flops
from lens_widget.log.gradients import summed
from lens_widget.log.nested import PADDED_NOTE, SampleShapes
from lens_widget.log.replay import ReplayCall
from lens_widget.log.stats import ActivationStats, activation_stats

# Why a node has no values at all: a re-run would capture none either.
META_NO_VALUES = "it ran on the meta device: a shape and dtype, no values"
IN_TRANSFORM_NO_VALUES = (
    "it ran inside a torch.func transform (vmap, grad, jacrev...): its values there are "
    "batched or traced, not one tensor to keep"
)

NodeKind = Literal["input", "param", "buffer", "const", "op", "output"]


class ParamUse(NamedTuple):
    """A parameter or buffer an op read directly (e.g. the weight of a linear)."""

    name: str
    shape: tuple[int, ...]
    numel: int


class _Unset(Enum):
    """A metric not computed yet (None is a result: "no formula", "not saved")."""

    UNSET = 0


UNSET_FLOPS = _Unset.UNSET  # what a record's flops are until first read


class ParentArg(NamedTuple):
    """Where a parent's tensor sat among the op's arguments ("0", "1.2", "bias")."""

    parent: str
    position: str
    output_index: int = 0


class OutputLeaf(NamedTuple):
    """Where a module call's output tensor sat in what it returned ("boxes", "0", "" for a
    lone tensor) and which output of its node it is (a topk's indices are output 1)."""

    path: str
    output: int = 0


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
    # Per pass, one per label of `outputs`: its path in the returned value and output index
    # (a log saved before these were kept has none: `output_leaves_of` makes them up).
    output_leaves: dict[int, list[OutputLeaf]] = field(default_factory=dict)

    def output_leaves_of(self, pass_index: int) -> list[OutputLeaf]:
        """The leaves of pass `pass_index`'s outputs: as recorded, else "0", "1"... in order
        (output 0 each), or "" for a lone one."""
        labels = self.outputs.get(pass_index, [])
        leaves = self.output_leaves.get(pass_index)
        if leaves is not None and len(leaves) == len(labels):
            return leaves
        if len(labels) == 1:
            return [OutputLeaf("")]
        return [OutputLeaf(str(i)) for i in range(len(labels))]


# slots: one record per op is made while the model runs; slotted ones are built faster.
# kw_only: built by name, so a field added or moved here cannot shift another (the per-op
# builder, capture/recorder.py's `_record`, sets each field by name without __init__;
# tests/python/test_records_by_name.py checks that it sets them all).
@dataclass(eq=False, slots=True, kw_only=True)
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
    # The plain function of the model's code the op ran in, called from its module's forward
    # outside any submodule (``create_causal_mask``; ``name~2`` for a second line calling
    # it): the ops sharing it in one module pass are boxed like a module
    # (log/function_groups.py). "" when the forward itself made the op.
    function: str = ""
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    device: str | None = None
    nbytes: int = 0
    # Whether the (first) output required grad: autograd recorded the op.
    requires_grad: bool = False
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
    # Milliseconds the op took, when the trace was timed; None otherwise.
    time_ms: float | None = None
    # The output was replaced during the pass: ``trace(..., intervene={...})``.
    intervened: bool = False
    activations: tuple[torch.Tensor, ...] | None = None
    # Outputs that were nested tensors (torch.nested; torch's nested-tensor fast path of
    # nn.TransformerEncoder): per output, each sample's shape, or None for a plain output;
    # None when no output was nested. A nested output's shape, saved value and statistics
    # are of it padded with zeros (log/nested.py).
    nested_shapes: tuple[SampleShapes | None, ...] | None = None
    # What validate() needs to replay the op: the call (None for an output sink) and, per
    # tensor argument, (position, the node that produced it, which of its outputs).
    replay: tuple[ReplayCall | None, list[ParentRef]] | None = None
    # Metrics computed on first use and kept (log/flops.py, log/stats.py).
    _flops: int | None | _Unset = field(default=_Unset.UNSET, init=False, repr=False)
    _stats: tuple[ActivationStats, ...] | None = field(default=None, init=False, repr=False)
    # Gradient of the (first) output, one entry per backward pass of the traced section
    # (None where that pass did not reach it); None when the trace kept no gradients.
    grads: tuple[torch.Tensor | None, ...] | None = field(default=None, init=False, repr=False)

    @property
    def activation(self) -> torch.Tensor | None:
        """The op's (first) output tensor as it was when produced, or None when not saved."""
        return self.activations[0] if self.activations else None

    @property
    def grad(self) -> torch.Tensor | None:
        """The gradient that flowed into the op's (first) output during the traced section,
        summed over its backward passes as ``.grad`` accumulates; None when none reached it
        or gradients were not kept."""
        return summed(self.grads)

    @property
    def saved(self) -> bool:
        return self.activations is not None

    @property
    def padded(self) -> str | None:
        """Why the shape, value and statistics shown are padded (an output was a nested
        tensor, see ``nested_shapes``); None for plain outputs."""
        return PADDED_NOTE if self.nested_shapes is not None else None

    @property
    def no_values(self) -> str | None:
        """Why the node has no values to keep at all (the meta device, inside a torch.func
        transform), so asking for them is pointless; None when it has or could have."""
        if self.device == "meta":
            return META_NO_VALUES
        call = self.replay[0] if self.replay is not None else None
        return IN_TRANSFORM_NO_VALUES if call is not None and call.in_transform else None

    @property
    def flops(self) -> int | None:
        """Floating-point operations of the op's forward call, from the formulas of
        ``torch.utils.flop_counter`` and, for attention kernels torch lacks one for (CPU's
        fused SDPA), ``log/flop_formulas.py`` (computed on first use from the recorded
        shapes); None where there is no formula (elementwise ops, copies...)."""
        if self._flops is _Unset.UNSET:
            self._flops = op_flops(self)
        return self._flops

    @property
    def param_count(self) -> int:
        """Elements of the parameters and buffers the op read directly."""
        return sum(p.numel for p in self.params)

    @property
    def stats(self) -> ActivationStats | None:
        """Statistics of the (first) saved output: mean, std, min, max, absmax,
        zero_fraction, nan, inf (counts), numel. None when not saved."""
        per_output = self.output_stats
        return per_output[0] if per_output else None

    @property
    def output_stats(self) -> tuple[ActivationStats, ...] | None:
        """Statistics of every saved output, computed once (see ``ModelLog.compute_metrics``
        for all ops in one batch)."""
        if self._stats is None and self.activations is not None:
            self._stats = tuple(activation_stats(self.activations))
        return self._stats

    @staticmethod
    def compute_stats(records: Iterable[OpRecord]) -> None:
        """Fill the statistics of many records in one batch (one host copy per device)."""
        pending = [r for r in records if r._stats is None and r.activations is not None]
        flat = activation_stats([t for r in pending for t in r.activations or ()])
        start = 0
        for r in pending:
            n = len(r.activations or ())
            r._stats = tuple(flat[start : start + n])
            start += n

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


_label_of = attrgetter("label")


def index_by_label(nodes: Sequence[OpRecord]) -> dict[str, OpRecord]:
    """label -> record, made in a C loop (no bytecode per node); ModelLog keeps one, for
    builders called without it."""
    return dict(zip(map(_label_of, nodes), nodes, strict=True))
