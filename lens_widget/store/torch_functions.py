"""The functions a loaded log may call, by qualified name: torch's own ops, and a few pure
operators that libraries register with torch (torchvision's NMS and RoI ops), nothing else.

A saved log names each op's function ("torch.nn.functional.linear", "torch.Tensor.add").
Loading looks the name up in a table built from torch's objects (never by importing or
evaluating text from the file); a name not in the table is not called: validate() reports
the op as skipped.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional
import torch.overrides

# The tracer's stand-in for a module that returned its input unchanged.
IDENTITY_NAME = "lens_widget.identity"


def identity(tensor: torch.Tensor) -> torch.Tensor:
    """What a loaded log's "lens_widget.identity" ops replay as: the input itself."""
    return tensor


def _is_tracer_identity(func: Callable[..., Any]) -> bool:
    # Recognised by name on the in-memory function, so this module needs nothing of capture.
    module = getattr(func, "__module__", None) or ""
    return module.startswith("lens_widget.") and getattr(func, "__name__", "") == "identity"


# torch namespaces whose public callables are ops (factory ops among them: torch.arange, ...).
# (getattr: torch's type stubs do not list these C modules)
_NAMESPACES: dict[str, Any] = {
    "torch": getattr(torch._C, "_VariableFunctions"),  # noqa: B009
    "torch._C._nn": getattr(torch._C, "_nn"),  # noqa: B009
}
# Tensor methods torch dispatches through __torch_function__ but does not list as overridable.
_TENSOR_METHODS = (
    "new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros", "new_tensor",
    "unflatten", "to_padded_tensor",
)  # fmt: skip
# Private ops of those namespaces that optimizers and clip_grad_norm_ call (torch._foreach_add_,
# torch._fused_adam_) and torch's fast paths of attention and transformer layers call
# (capture/fast_paths.py): arithmetic on their arguments, listed like the public ones.
_PRIVATE_OPS = (
    "_foreach_", "_fused_", "_native_multi_head_attention", "_transformer_encoder_layer_fwd",
    "_nested_tensor_from_mask",
)  # fmt: skip
# torch.nn.functional's functions that dispatch through __torch_function__ (so a trace records
# them) though torch.overrides lists them as ignored: hardswish, hardsigmoid.
_FUNCTIONAL = torch.nn.functional
# Operators libraries register (torch.ops.<library>.<op>): pure tensor computations, replayed
# once their library is loaded. Looked up in torch's dispatcher only: a name never imports.
_LIBRARY_OPS = frozenset(
    f"torchvision::{op}"
    for op in ("nms", "roi_align", "roi_pool", "ps_roi_align", "ps_roi_pool", "deform_conv2d")
)
_OPS_PREFIX = "torch.ops."
# Ops of those namespaces that read files or foreign memory: never called from a saved log.
_DENIED = frozenset({"torch.from_file", "torch.from_numpy", "torch.frombuffer"})


@functools.cache
def _tables() -> tuple[dict[str, Callable[..., Any]], dict[int, str]]:
    by_name: dict[str, Callable[..., Any]] = {}
    # Every function torch dispatches through __torch_function__: what a trace records.
    for functions in torch.overrides.get_overridable_functions().values():
        for func in functions:
            name = torch.overrides.resolve_name(func)
            if name:
                by_name.setdefault(name, func)
    for prefix, namespace in _NAMESPACES.items():
        for attribute in dir(namespace):
            func = getattr(namespace, attribute)
            private = attribute.startswith("_") and not attribute.startswith(_PRIVATE_OPS)
            if private or not callable(func):
                continue
            name = torch.overrides.resolve_name(func) or f"{prefix}.{attribute}"
            by_name.setdefault(name, func)
    for attribute in dir(_FUNCTIONAL):
        func = getattr(_FUNCTIONAL, attribute)
        own = isinstance(func, types.FunctionType) and func.__module__ == _FUNCTIONAL.__name__
        if own and not attribute.startswith("_"):
            by_name.setdefault(f"{_FUNCTIONAL.__name__}.{attribute}", func)
    for attribute in _TENSOR_METHODS:
        by_name.setdefault(f"torch.Tensor.{attribute}", getattr(torch.Tensor, attribute))
    for name in _DENIED:
        by_name.pop(name, None)
    by_name[IDENTITY_NAME] = identity
    by_id = {id(func): name for name, func in by_name.items()}
    return by_name, by_id


def function_name(func: Callable[..., Any]) -> str | None:
    """The allow-listed name of a recorded function, or None when it has none."""
    by_name, by_id = _tables()
    if _is_tracer_identity(func):
        return IDENTITY_NAME
    if isinstance(func, torch._ops.OpOverloadPacket):
        qualified = func._qualified_op_name
        return _op_name(qualified) if qualified in _LIBRARY_OPS else None
    name = by_id.get(id(func))
    if name is not None:
        return name
    # Property getters (Tensor.T.__get__) are new objects on each access: compare by value.
    name = torch.overrides.resolve_name(func)
    if name is not None and name in by_name and by_name[name] == func:
        return name
    return None


def resolve_function(name: str) -> Callable[..., Any] | None:
    """The torch function a saved name stands for, or None when it is not allow-listed."""
    if name.startswith(_OPS_PREFIX):
        return _library_op(name.removeprefix(_OPS_PREFIX).replace(".", "::", 1))
    return _tables()[0].get(name)


def _op_name(qualified: str) -> str:
    """The name Python code calls an operator by: torchvision::nms is torch.ops.torchvision.nms."""
    return _OPS_PREFIX + qualified.replace("::", ".", 1)


def _library_op(qualified: str) -> Callable[..., Any] | None:
    """An allow-listed library operator, if its library has registered it in this process."""
    if qualified not in _LIBRARY_OPS:
        return None
    namespace, op = qualified.split("::")
    try:
        return getattr(getattr(torch.ops, namespace), op)
    except AttributeError:  # the library is not loaded
        return None


def describe_function(func: Callable[..., Any]) -> str:
    """A readable name for a function outside the allow-list (shown, never resolved)."""
    if isinstance(func, torch._ops.OpOverloadPacket):  # its __qualname__ is pybind11's
        return _op_name(func._qualified_op_name)
    if isinstance(func, torch._ops.OpOverload):
        return f"{_op_name(func._schema.name)}.{func._overloadname}"
    module = getattr(func, "__module__", None) or ""
    qualname = getattr(func, "__qualname__", None) or type(func).__name__
    return f"{module}.{qualname}" if module else str(qualname)
