"""torch's fast paths run under a trace as they run without one.

Some of torch's modules choose a fused kernel only when ``torch.overrides.has_torch_function``
says no argument has a ``__torch_function__`` and no TorchFunctionMode is active:
``nn.MultiheadAttention`` (``_native_multi_head_attention``), ``nn.TransformerEncoderLayer``
(``_transformer_encoder_layer_fwd``) and ``nn.TransformerEncoder`` (its nested-tensor path).
Under a trace the recorder is such a mode, so they would take their slow Python path: other
kernels, other rounding, and the nested path's zeros at padded positions computed instead.

While a trace runs, ``torch.overrides.has_torch_function`` is `_as_if_untraced`: called from
one of those checks (a function keeping a ``why_not_*fast_path`` local, as torch's do) on a
thread whose mode stack holds only lens_widget's own modes, it answers as if they were not
there (the user's own mode or Tensor subclass still counts, as untraced); any other call goes
to the function it replaced unchanged. The fused call is then recorded as one op, its nested
outputs padded (nested_values.py). The function is put back when the last trace ends, also
when it raised. A check this cannot reach (a torch whose gated forward does not read the
function through ``torch.overrides``) is named by `unkept_fast_paths`: the trace warns and
the log keeps the note (``ModelLog.notes``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Mapping
from types import CodeType
from typing import Any

import torch
from torch import nn

_mode_enabled = torch._C._is_torch_function_mode_enabled
_stack_len = torch._C._len_torch_function_stack
_stack_at = torch._C._get_function_stack_at
_pop_mode = torch._C._pop_torch_function_stack
_push_mode = torch._C._push_on_torch_function_stack
# Set on each mode class of lens_widget's own (the Recorder, the backward capture's
# RecomputeWatcher): an attribute, so the core names no feature's class.
OWN_MODE = "lens_widget_own_mode"
_OVERRIDES = sys.modules["torch.overrides"]  # where the gated forwards read the function
_NAME = "has_torch_function"
# The locals torch's fast-path checks keep the reason in
_REASONS = ("why_not_fast_path", "why_not_sparsity_fast_path")
# The modules whose forward chooses a fast path this way (torch 2.x)
GATED_MODULES: tuple[type[nn.Module], ...] = (
    nn.MultiheadAttention,
    nn.TransformerEncoderLayer,
    nn.TransformerEncoder,
)


def _reads_the_check(code: CodeType) -> bool:
    """The function asks ``torch.overrides.has_torch_function`` (an attribute, read at each
    call: the stand-in reaches it) to choose a fast path."""
    return _NAME in code.co_names and any(name in code.co_varnames for name in _REASONS)


# Whether each caller's code is a fast-path check (found on first call; never changes)
_IS_CHECK: dict[CodeType, bool] = {}


def _as_if_untraced(relevant_args: Any) -> Any:
    original = _Installed.original
    if _mode_enabled():
        code = sys._getframe(1).f_code
        is_check = _IS_CHECK.get(code)
        if is_check is None:
            is_check = _IS_CHECK[code] = any(name in code.co_varnames for name in _REASONS)
        if is_check:
            return _without_our_modes(original, relevant_args)
    return original(relevant_args)


def _without_our_modes(original: Any, relevant_args: Any) -> Any:
    """`original`'s answer with lens_widget's modes off this thread's mode stack; a stack
    holding a mode of someone else's answers as it is (True)."""
    depth = _stack_len()
    if not all(getattr(_stack_at(i), OWN_MODE, False) for i in range(depth)):
        return original(relevant_args)
    modes = [_pop_mode() for _ in range(depth)]
    try:
        return original(relevant_args)
    finally:
        for mode in reversed(modes):
            _push_mode(mode)


class _Installed:
    """How many traces are running (the stand-in is in place while any is), and the function
    it stands in for."""

    lock = threading.Lock()
    count = 0
    original: Any = torch.overrides.has_torch_function


class FastPaths:
    """While entered, torch's fast-path checks see no lens_widget mode (module doc)."""

    def __enter__(self) -> FastPaths:
        with _Installed.lock:
            if _Installed.count == 0:
                current = vars(_OVERRIDES)[_NAME]
                if current is not _as_if_untraced:
                    _Installed.original = current  # torch's, or a stand-in of someone else's
                    vars(_OVERRIDES)[_NAME] = _as_if_untraced
            _Installed.count += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with _Installed.lock:
            _Installed.count -= 1
            if _Installed.count == 0:
                namespace = vars(_OVERRIDES)
                if namespace.get(_NAME) is _as_if_untraced:  # else replaced since: left so
                    namespace[_NAME] = _Installed.original


# The gated modules whose check this torch's forward does not read through torch.overrides
# (none on the torch versions lens_widget is tested with): `unkept_fast_paths` names them.
UNREACHABLE: tuple[type[nn.Module], ...] = tuple(
    cls for cls in GATED_MODULES if not _reads_the_check(cls.forward.__code__)
)


def unkept_fast_paths(roots: nn.Module | Mapping[str, nn.Module]) -> list[str]:
    """A note per traced module whose fast-path check the stand-in cannot reach: the trace
    may run its slow path where an untraced forward would run the fused kernel. No walk of
    the model when every gated module's check is reachable."""
    if not UNREACHABLE:
        return []
    if isinstance(roots, nn.Module):
        named: Iterable[tuple[str, nn.Module]] = roots.named_modules()
    else:
        named = (
            (f"{key}.{address}" if address else key, module)
            for key, root in roots.items()
            for address, module in root.named_modules()
        )
    return [
        f"{address or '<root>'} ({type(module).__name__}): torch's fast-path check cannot be "
        "kept under a trace on this torch; where an untraced forward would run the fused "
        "kernel, the traced one runs the slow path (other rounding; on the nested-tensor "
        "path, padded positions computed instead of zeros)"
        for address, module in named
        if isinstance(module, UNREACHABLE)
    ]
