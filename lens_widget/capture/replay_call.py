"""How an op is replayed: its function, argument templates, and the state it ran in."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import torch

Tensor = torch.Tensor


class ReplayCall:
    """What validate() needs: the function, its argument templates (tensors replaced by
    TensorSlots), and the state it ran in.

    Most calls set only the first three; the others read as their class defaults until set
    (one object per op is made while the model runs: the fewer fields set, the faster).
    """

    __slots__ = ("func", "args", "kwargs", "__dict__")

    # Tensor arguments whose value no node holds (a view changed through its base):
    # slot index -> copy of the value at call time.
    literals: dict[int, Tensor] = MappingProxyType({})  # type: ignore[assignment]
    # The generators' states before a random op: the CPU one, and the CUDA ones once CUDA
    # is in use (host-side copies: no device synchronisation).
    rng_state: Tensor | None = None
    cuda_rng_states: list[Tensor] | None = None
    # ((device type, dtype), ...) of the autocast contexts the op ran under
    autocast: tuple[tuple[str, torch.dtype], ...] = ()

    def __init__(self, func: Callable[..., Any], args: Any, kwargs: Any) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs
