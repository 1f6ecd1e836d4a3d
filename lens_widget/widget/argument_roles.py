"""The name of each argument of a recorded call: the role it plays (query, key, value,
attn_mask; input, weight, bias), from the function's Python signature or, for torch's
builtins (which have none), from its ATen schema; and the defaults of those not passed.

Looked up once per function and call form and kept: a graph has many ops, few functions.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Signature(NamedTuple):
    """Names of the positional parameters in order, and (name, default) of every parameter
    that has a default."""

    positional: tuple[str, ...]
    defaults: tuple[tuple[str, Any], ...]


_NONE = Signature((), ())


def argument_names(
    func: Callable[..., Any], n_args: int, kwargs: Sequence[str]
) -> tuple[list[str], list[tuple[str, Any]]]:
    """(a name for each of the `n_args` positional arguments of a call of `func` that also
    passed `kwargs` by name, "arg 2" where nothing names it; (name, default) of each
    parameter the call left at its default)."""
    sig = _signature(func, n_args, tuple(sorted(kwargs)))
    names = list(sig.positional[:n_args])
    if names and names[0] == "self":  # the tensor a method runs on, named as torch.* name it
        names[0] = "input"
    names += [f"arg {i}" for i in range(len(names), n_args)]
    passed = set(names) | set(kwargs) | set(sig.positional[:n_args])
    return names, [(name, value) for name, value in sig.defaults if name not in passed]


@functools.lru_cache(maxsize=4096)
def _signature(func: Callable[..., Any], n_args: int, kwargs: tuple[str, ...]) -> Signature:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin: its schema names the arguments
        return _schema_signature(func, n_args, kwargs)
    positional = tuple(p.name for p in params if p.kind in _POSITIONAL)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params) and len(positional) < n_args:
        return _schema_signature(func, n_args, kwargs)  # f(*args): the names are in the schema
    defaults = tuple(
        (p.name, p.default) for p in params if p.default is not inspect.Parameter.empty
    )
    return Signature(positional, defaults)


def _schema_signature(func: Callable[..., Any], n_args: int, kwargs: tuple[str, ...]) -> Signature:
    """The first ATen overload of the function's name that takes `n_args` positional
    arguments and every keyword passed (schemas call the tensor a method runs on `self`)."""
    name = getattr(func, "__name__", "")
    if not isinstance(name, str) or not name:
        return _NONE
    # aten::__and__ exists; `__mul__` is aten::mul
    for schema in _schemas(name) or _schemas(name.strip("_")):
        arguments = schema.arguments
        if any(a.is_out for a in arguments):
            continue
        positional = tuple(a.name for a in arguments if not a.kwarg_only)
        if not set(kwargs) <= {a.name for a in arguments}:
            continue
        last = [a for a in arguments if not a.kwarg_only][-1:]
        if len(positional) < n_args and last and str(last[0].real_type).startswith("List["):
            # x.view(2, -1): the sizes passed one by one fill the last, list, parameter
            positional += (last[0].name,) * (n_args - len(positional))
        if len(positional) >= n_args:
            defaults = tuple((a.name, a.default_value) for a in arguments if _plain_default(a))
            return Signature(positional, defaults)
    return _NONE


def _plain_default(argument: Any) -> bool:
    """A default worth printing: enums (dtype, layout, memory format) are ints in schemas."""
    if not argument.has_default_value():
        return False
    enum = any(
        word in str(argument.real_type) for word in ("ScalarType", "Layout", "Memory", "Device")
    )
    return not enum or argument.default_value is None


def _schemas(name: str) -> list[Any]:
    try:
        return torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except RuntimeError:
        return []
