"""How a logged op is replayed: its call with every tensor argument replaced by a slot.

The tracer (lens_widget.capture.arguments) builds these templates while the model runs;
validate() fills the slots with copies of the saved activations and calls the function again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import torch
from torch.utils import _pytree as pytree

Tensor = torch.Tensor


class TensorSlot:
    """Stands in for the k-th tensor argument of a call inside its template."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<tensor {self.index}>"


class PytreeTemplate:
    """A pytree container (namedtuple, ...) whose leaves hold tensors; rebuilt on replay."""

    __slots__ = ("leaves", "spec")

    def __init__(self, leaves: list[Any], spec: pytree.TreeSpec) -> None:
        self.leaves, self.spec = leaves, spec


# Device types torch.autocast may be on for, as the recorder checks them.
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu")


class ReplayCall:
    """What validate() needs: the function, its argument templates, and the state it ran in.

    The templates hold the call's own Python values (ints, strings, dtypes, ...) with
    `TensorSlot`s and `PytreeTemplate`s where tensors were. Most calls set only the first
    three fields; the others read as their class defaults until set (one object per op is made
    while the model runs: the fewer fields set, the faster).
    """

    __slots__ = ("func", "args", "kwargs", "__dict__")

    # Tensor arguments whose value no node holds (a view changed through its base):
    # slot index -> copy of the value at call time.
    literals: Mapping[int, Tensor] = MappingProxyType({})
    # The generators' states before a random op: the CPU one, and the CUDA ones once CUDA
    # is in use (host-side copies: no device synchronisation).
    rng_state: Tensor | None = None
    cuda_rng_states: list[Tensor] | None = None
    # ((device type, dtype), ...) of the autocast contexts the op ran under (AUTOCAST_DEVICES)
    autocast: tuple[tuple[str, torch.dtype], ...] = ()
    # Why the call cannot be replayed (a loaded log naming a function outside torch):
    # validate() skips the op with this reason. None: it can be.
    unavailable: str | None = None
    # Ran inside a torch.func transform (vmap, grad...): its values there were batched or
    # traced tensors, not one tensor to keep (capture/transforms.py).
    in_transform: bool = False
    # A call that wrote its tensor arguments and returned None (torch._fused_adam_): the
    # slots of what it wrote, which are its outputs.
    written_slots: tuple[int, ...] = ()

    def __init__(self, func: Callable[..., Any], args: Any, kwargs: Any) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs


def fill_template(template: Any, tensors: Sequence[object]) -> Any:
    """The inverse of scanning a call: put tensors back into their slots."""
    kind = type(template)
    if kind is TensorSlot:
        return tensors[template.index]
    if kind is tuple or kind is list:
        return kind(fill_template(v, tensors) for v in template)
    if kind is dict:
        return {k: fill_template(v, tensors) for k, v in template.items()}
    if kind is PytreeTemplate:
        return pytree.tree_unflatten(
            [fill_template(v, tensors) for v in template.leaves], template.spec
        )
    return template


def tensor_leaves(value: Any) -> list[Tensor]:
    """Every tensor in a (possibly nested) output, in a stable order."""
    if type(value) is Tensor:
        return [value]
    if type(value) in (tuple, list) and all(type(v) is Tensor or v is None for v in value):
        # a module's (hidden, None): flat, without pytree (~10 µs a call while tracing)
        return [v for v in value if v is not None]
    return [leaf for leaf in pytree.tree_leaves(value) if isinstance(leaf, Tensor)]
