"""Sharded parameters and DTensor values in a distributed trace's log.

`placements`: how each sharded parameter lives on this rank (``log.placements``);
`keep_local_values`: a log's DTensor values as plain tensors this rank holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from lens_widget.capture.model_names import ModelNames
from lens_widget.log.distributed import ParamPlacement

if TYPE_CHECKING:
    from lens_widget.log.model_log import ModelLog

Tensor = torch.Tensor


def dtensor_type() -> type | None:
    """torch's DTensor class (None in a build without it)."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a build without DTensor
        return None
    return DTensor


def placements(
    sharded: dict[str, Tensor], unsharded: set[str], replicated: ModelNames | None, world_size: int
) -> dict[str, ParamPlacement]:
    """The `sharded` parameters (DTensors: FSDP2, tensor parallel, by name) and, under DDP,
    the `replicated` ones; `grad` says what the log's gradient of each is (log.leaves: what
    autograd handed the parameter, before the engine reduces it). `unsharded`: the names
    FSDP ran with a full parameter."""
    found: dict[str, ParamPlacement] = {}
    for name, param in sharded.items():
        mesh = param.device_mesh  # pyright: ignore[reportAttributeAccessIssue]
        if name in unsharded:  # FSDP: the full parameter ran, the shard is kept
            grad = "full, before reduce-scatter (the engine keeps its local shard)"
        else:
            grad = grad_kind(param.grad)
        found[name] = ParamPlacement(
            full_shape=tuple(param.shape),
            local_shape=tuple(param._local_tensor.shape),  # pyright: ignore[reportAttributeAccessIssue]
            placements=tuple(repr(p) for p in param.placements),  # pyright: ignore[reportAttributeAccessIssue]
            mesh_shape=tuple(mesh.shape),
            mesh_dim_names=tuple(mesh.mesh_dim_names or ()),
            grad=grad,
        )
    if replicated is not None:  # DDP: every parameter whole on every rank
        for param in replicated.params:
            name = replicated.tensors[id(param)][0]
            shape = tuple(param.shape)
            found.setdefault(
                name,
                ParamPlacement(
                    full_shape=shape, local_shape=shape, placements=("Replicate()",),
                    mesh_shape=(world_size,),
                    grad="none" if param.grad is None else "full, before all-reduce",
                ),
            )  # fmt: skip
    return found


def grad_kind(grad: Tensor | None) -> str:
    """What a DTensor parameter's gradient is on this rank."""
    dtensor = dtensor_type()
    if grad is None:
        return "none"
    if dtensor is not None and isinstance(grad, dtensor):
        placements = grad.placements  # pyright: ignore[reportAttributeAccessIssue]
        if any(p.is_shard() for p in placements):
            return "local shard"
        if any(p.is_partial() for p in placements):
            return "partial (before reduction)"
    return "full"


def keep_local_values(log: ModelLog, dtensor: type) -> None:
    """DTensor values are kept as plain tensors, readable without the other ranks: a node's
    value (whose shape is the logical one) where the rank holds all of it (replicated),
    else none; a leaf's gradient as this rank's local tensor (``log.placements`` says what
    it is)."""

    def plain(values: Any, whole_only: bool) -> Any:
        if values is None or not any(isinstance(t, dtensor) for t in values):
            return values
        kept = []
        for t in values:
            if isinstance(t, dtensor):
                local = t._local_tensor.detach()
                if whole_only and local.shape != t.shape:
                    return None  # a shard: the value needs the other ranks
                t = local
            kept.append(t)
        return tuple(kept)

    for node in log.nodes:
        node.activations = plain(node.activations, whole_only=True)
        node.grads = plain(node.grads, whole_only=True)
    for leaf in log.leaves.values():
        leaf.grads = plain(leaf.grads, whole_only=False)
