"""Taking one TorchFunctionMode off this thread's mode stack for a while, keeping the others."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

_stack_len = torch._C._len_torch_function_stack
_stack_at = torch._C._get_function_stack_at
_pop_mode = torch._C._pop_torch_function_stack
_push_mode = torch._C._push_on_torch_function_stack


@contextmanager
def mode_off_stack(mode: Any) -> Iterator[None]:
    """`mode` taken off this thread's torch function mode stack (the modes above it stay,
    in order); put back where it was on exit."""
    depth = _stack_len()
    index = next((i for i in range(depth) if _stack_at(i) is mode), None)
    if index is None:
        yield
        return
    above = [_pop_mode() for _ in range(depth - 1 - index)][::-1]  # bottom first
    _pop_mode()
    for other in above:
        _push_mode(other)
    try:
        yield
    finally:
        for _ in above:
            _pop_mode()
        _push_mode(mode)
        for other in above:
            _push_mode(other)
