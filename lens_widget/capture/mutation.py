"""Which arguments a torch call is about to modify in place.

The tracer saves activations by reference; before a call overwrites a saved tensor's
storage, the saved value is copied. This module names the tensors such a call writes to.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch

# Python's augmented-assignment operators write into their left operand.
_INPLACE_DUNDERS = frozenset(
    f"__i{op}__"
    for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow")
    + ("lshift", "rshift", "and", "or", "xor", "div")
)

# Kernels that update buffers they are handed (batch norm's running statistics in training).
_RUNNING_STAT_FUNCS = frozenset({"batch_norm", "instance_norm"})


def _inplace_flag_position(func: Callable[..., Any]) -> int | None:
    """Position of an `inplace` parameter (F.relu(x, True)), or None."""
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None
    return params.index("inplace") if "inplace" in params else None


class MutationRule:
    """What one torch function may write to; computed once per function."""

    __slots__ = ("writes_first", "inplace_flag_position", "writes_running_stats")

    def __init__(self, func: Callable[..., Any], name: str) -> None:
        self.writes_first = (
            (name.endswith("_") and not name.startswith("__"))
            or name in _INPLACE_DUNDERS
            or name == "__setitem__"
        )
        self.inplace_flag_position = None if self.writes_first else _inplace_flag_position(func)
        self.writes_running_stats = name in _RUNNING_STAT_FUNCS

    def targets(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
        """The tensors this call will write to (empty for pure functions)."""
        found: list[torch.Tensor] = []
        first = args[0] if args else None
        if isinstance(first, torch.Tensor) and (
            self.writes_first or self._inplace_flag(args, kwargs)
        ):
            found.append(first)
        out = kwargs.get("out")
        if out is not None:
            found.extend(t for t in (out if isinstance(out, (tuple, list)) else (out,)))
        if self.writes_running_stats:
            found.extend(a for a in args[1:3] if isinstance(a, torch.Tensor))
            found.extend(
                kwargs[k]
                for k in ("running_mean", "running_var")
                if isinstance(kwargs.get(k), torch.Tensor)
            )
        return found

    def _inplace_flag(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        if kwargs.get("inplace") is True:
            return True
        position = self.inplace_flag_position
        return position is not None and len(args) > position and args[position] is True
