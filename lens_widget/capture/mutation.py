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

# Norms that update the running statistics they are handed when this flag is true.
_RUNNING_STAT_FLAGS = {"batch_norm": "training", "instance_norm": "use_input_stats"}
# Parameter order of torch.batch_norm / torch.instance_norm (builtins: no signature to read).
_ATEN_NORM_PARAMS = ["input", "weight", "bias", "running_mean", "running_var", "flag"]


def _schema_writes(name: str) -> tuple[tuple[int, str], ...]:
    """(position, name) of the arguments after the first that torch's own schema marks as
    written (`Tensor(a!)[]`), over all overloads of the aten op of this name: the moments
    and gradients `torch._fused_adamw_` updates beside the parameters."""
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if packet is None or not hasattr(packet, "overloads"):
        return ()
    written = {
        (i, argument.name)
        for overload in packet.overloads()
        for i, argument in enumerate(getattr(packet, overload)._schema.arguments)
        if i > 0 and argument.alias_info is not None and argument.alias_info.is_write
    }
    return tuple(sorted(written))


def _tensors_in(value: Any) -> list[torch.Tensor]:
    """A tensor argument, or the tensors of a list argument (torch._foreach_add_(params, ...))."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _parameter_names(func: Callable[..., Any]) -> list[str] | None:
    try:
        return list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None


def _position(names: list[str] | None, name: str) -> int | None:
    return names.index(name) if names is not None and name in names else None


class MutationRule:
    """What one torch function may write to; computed once per function."""

    __slots__ = ("writes_first", "also_writes", "inplace_flag_position", "running_stats")

    def __init__(self, func: Callable[..., Any], name: str) -> None:
        self.writes_first = (
            (name.endswith("_") and not name.startswith("__"))
            or name in _INPLACE_DUNDERS
            or name == "__setitem__"
        )
        # Other arguments an in-place op writes, from torch's schema (most write only the first)
        self.also_writes = _schema_writes(name) if self.writes_first else ()
        names = None if self.writes_first else _parameter_names(func)
        self.inplace_flag_position = _position(names, "inplace")
        # (flag name, flag position, positions of running_mean / running_var), for norms
        self.running_stats: tuple[str, int | None, list[int | None]] | None = None
        flag = _RUNNING_STAT_FLAGS.get(name)
        if flag is not None:
            names = names or [*_ATEN_NORM_PARAMS[:5], flag]
            stats = [_position(names, "running_mean"), _position(names, "running_var")]
            self.running_stats = (flag, _position(names, flag), stats)

    def targets(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[torch.Tensor]:
        """The tensors this call will write to (empty for pure functions)."""
        found: list[torch.Tensor] = []
        # nn.init.normal_(tensor=t) passes its target by keyword
        first = (
            args[0]
            if args
            else next((v for v in kwargs.values() if isinstance(v, torch.Tensor)), None)
        )
        if self.writes_first or self._inplace_flag(args, kwargs):
            # A list: optimizers and clip_grad_norm_ write many tensors in one foreach call
            found.extend(_tensors_in(first))
        for position, name in self.also_writes:
            found.extend(_tensors_in(argument(args, kwargs, position, (name,))))
        out = kwargs.get("out")
        if out is not None:
            found.extend(t for t in (out if isinstance(out, (tuple, list)) else (out,)))
        if self.running_stats is not None:
            found.extend(self._written_running_stats(args, kwargs))
        return found

    def _written_running_stats(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> list[torch.Tensor]:
        flag_name, flag_position, stat_positions = self.running_stats  # pyright: ignore[reportGeneralTypeIssues]  # only called when running_stats is set
        flag = argument(args, kwargs, flag_position, (flag_name,))
        if not flag:  # eval mode reads the statistics without writing them
            return []
        stats = (
            argument(args, kwargs, position, (name,))
            for position, name in zip(stat_positions, ("running_mean", "running_var"), strict=True)
        )
        return [t for t in stats if isinstance(t, torch.Tensor)]

    def _inplace_flag(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        if kwargs.get("inplace") is True:
            return True
        position = self.inplace_flag_position
        return position is not None and len(args) > position and args[position] is True


def argument(
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any] | None,
    position: int | None,
    names: tuple[str, ...],
    default: Any = None,
) -> Any:
    """An argument passed at `position` or by one of `names`, else `default`."""
    if position is not None and len(args) > position:
        return args[position]
    if kwargs:
        for name in names:
            if name in kwargs:
                return kwargs[name]
    return default
