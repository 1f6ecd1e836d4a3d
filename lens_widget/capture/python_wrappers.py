"""torch's functions written in Python (``F.layer_norm``, ``F.dropout``, ``F.relu``,
``Tensor.split``...) reach the recorder without torch's generic route into a mode.

Such a function checks ``has_torch_function(...)`` and, when a mode is active, calls
``torch.overrides.handle_torch_function``, which scans the arguments for types that override
``__torch_function__`` and enters the mode through a generator context manager: ~3-4 µs a
call here, more than recording a built-in's call costs, and most of what a ResNet's batch
norms and ReLUs pay for being traced (tracing-cost.md). While a trace runs, the global
``handle_torch_function`` of the modules holding those functions is `_into_recorder`: when
the calling thread's innermost mode is a Recorder, it pops it, calls its
``__torch_function__`` and pushes it back, as torch's route does (the recorder reads no
``types``: it handles Tensor subclasses itself, and never answers NotImplemented); any
other call goes to torch's function unchanged, so other threads and the user's own modes
see what they would untraced. torch's function is put back when the last trace ends, also
when it raised.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import handle_torch_function

from lens_widget.capture.recorder import Recorder

# The modules whose Python functions a model's forward calls (torch.nn.functional: the F.*
# wrappers; torch.functional: torch.split, einsum...; torch._tensor: Tensor.split, __rsub__...)
_MODULES = ("torch.nn.functional", "torch.functional", "torch._tensor")
_NAME = "handle_torch_function"
_mode_enabled = torch._C._is_torch_function_mode_enabled
_stack_depth = torch._C._len_torch_function_stack
_mode_at = torch._C._get_function_stack_at
_pop_mode = torch._C._pop_torch_function_stack
_push_mode = torch._C._push_on_torch_function_stack


def _into_recorder(
    public_api: Callable[..., Any], relevant_args: Any, *args: Any, **kwargs: Any
) -> Any:
    if _mode_enabled():
        depth = _stack_depth()
        mode = _mode_at(depth - 1) if depth else None
        if isinstance(mode, Recorder):
            _pop_mode()
            try:
                return mode.__torch_function__(public_api, (), args, kwargs)
            finally:
                _push_mode(mode)
    return handle_torch_function(public_api, relevant_args, *args, **kwargs)


class _Installed:
    """How many traces are running (the stand-in is in place while any is), and torch's
    function each module had before."""

    lock = threading.Lock()
    count = 0
    originals: dict[str, Any] = {}  # noqa: RUF012 - one process-wide table


class PythonWrappers:
    """While entered (on the tracing thread, after the recorder), torch's Python functions
    go straight into the recorder (see the module doc)."""

    def __enter__(self) -> PythonWrappers:
        with _Installed.lock:
            if _Installed.count == 0:
                for name in _MODULES:
                    module = sys.modules.get(name)
                    # a module whose global someone else replaced is left as it is
                    if module is not None and vars(module).get(_NAME) is handle_torch_function:
                        _Installed.originals[name] = handle_torch_function
                        vars(module)[_NAME] = _into_recorder
            _Installed.count += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with _Installed.lock:
            _Installed.count -= 1
            if _Installed.count == 0:
                for name, original in _Installed.originals.items():
                    namespace = vars(sys.modules[name])
                    if namespace.get(_NAME) is _into_recorder:
                        namespace[_NAME] = original
                _Installed.originals.clear()
