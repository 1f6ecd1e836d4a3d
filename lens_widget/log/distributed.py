"""What a traced step did under torch.distributed: the rank, the collectives, the sharding.

Shared names between the tracer (``capture/``), the files (``store/``) and the views
(``widget/``, ``compare/``): a log made inside ``torch.distributed`` knows its ``rank`` and
``world_size`` (both None outside it); each collective the step ran is an op of the log
whose label keys a ``CollectiveInfo`` in ``log.collectives``; each parameter that an
engine (FSDP2, DTensor) sharded is described by a ``ParamPlacement`` in
``log.placements``; the engine's own bookkeeping calls (FSDP's copy-in and splits, DDP's
bucket views, DTensor's wrapping) are not ops of the model and are kept in
``log.engine_calls``, in the order they ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

StepPhase = Literal["forward", "backward", "optimizer"]


@dataclass(frozen=True)
class CollectiveInfo:
    """One collective call: what it was, over which ranks, how many bytes it moved.

    `kind`: the collective's name as torch calls it (``all_reduce``,
    ``all_gather_into_tensor``, ``reduce_scatter_tensor``, ``broadcast``, ...).
    `group_ranks`: the global ranks of its process group, in group order; `nbytes`: the
    bytes this rank sent into the collective (its input tensors' sizes). `phase`: when in
    the step it ran. `engine`: which engine issued it ("" for the user's own call,
    else ``"fsdp"``, ``"ddp"``, ``"dtensor"``). `observed`: False when the call was
    not seen but recorded from the engine's plan (DDP's bucket all-reduces). `params`: the
    parameters (by ``named_parameters`` name) whose values or gradients it moved, for an
    engine's collective of parameters (FSDP, DDP).
    """

    kind: str
    group_ranks: tuple[int, ...]
    nbytes: int
    phase: StepPhase = "forward"
    engine: str = ""
    # False where no Python call was seen and the record comes from the engine's plan (DDP's
    # bucket all-reduces, which its C++ reducer issues)
    observed: bool = True
    # The parameters whose values or gradients it moved, by name (FSDP's all-gathers and
    # reduce-scatters, DDP's buckets); () for activations and the user's own calls
    params: tuple[str, ...] = ()

    @property
    def group_size(self) -> int:
        return len(self.group_ranks)


@dataclass(frozen=True)
class ParamPlacement:
    """How a sharded parameter lives on this rank.

    `full_shape`: its logical shape (as the undistributed model has it); `local_shape`: the
    shard this rank holds; `placements`: one per mesh dimension, as DTensor prints them
    (``"Shard(dim=0)"``, ``"Replicate()"``); `mesh_shape` and `mesh_dim_names`: the device
    mesh. `grad`: what the log's gradient of it (``log.leaves``) is: ``"local shard"``,
    ``"full"``, ``"none"``, or, where autograd handed the engine a full gradient it then
    reduces, ``"full, before reduce-scatter (the engine keeps its local shard)"`` (FSDP2),
    ``"full, before all-reduce"`` (DDP).
    """

    full_shape: tuple[int, ...]
    local_shape: tuple[int, ...]
    placements: tuple[str, ...]
    mesh_shape: tuple[int, ...]
    mesh_dim_names: tuple[str, ...] = ()
    grad: str = "local shard"


@dataclass(frozen=True)
class EngineCall:
    """A torch call that a distributed engine made for its own bookkeeping, not the model's.

    `engine`: ``"fsdp"``, ``"ddp"`` or ``"dtensor"`` (``"funcol"``: the functional
    collectives' own wrapping and waits, called from the user's code); `func`: the call's
    name; `module`:
    the address of the module whose call it belongs to ("" for the model); `phase`: when in
    the step it ran; `nbytes`: the bytes of its outputs.
    """

    engine: str
    func: str
    module: str
    phase: StepPhase = "forward"
    nbytes: int = 0
