"""Where in the code an op was called, found by walking the Python stack.

Two answers per op:
- the *call path*: the call sites (code, bytecode offset) from the op up to the nearest
  nn.Module call. It identifies an op for folding passes: a loop or a reused module repeats
  it exactly, while one helper called from two lines (rotate_half(q), rotate_half(k)) gives
  two paths;
- the *source* a person wants to read: the first frame outside torch and lens_widget.
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, FrameType

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_MODULES_DIR = os.path.join(_TORCH_DIR, "nn", "modules") + os.sep
_MODULE_CALL_FILE = os.path.join(_TORCH_MODULES_DIR, "module.py")
_MODULE_CALL_FUNCS = frozenset({"_call_impl", "_wrapped_call_impl", "inner"})
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# Frame kinds: skipped (torch's functional wrappers, lens_widget), torch's own nn.Module code
# (part of the call path, not user code), user code, and nn.Module.__call__ (the boundary).
SKIP, TORCH_MODULE, USER, MODULE_CALL = 0, 1, 2, 3

CallPath = tuple[tuple[CodeType, int], ...]


def _classify(code: CodeType) -> int:
    filename = code.co_filename
    if filename.startswith(_OWN_DIR):
        return SKIP
    if filename == _MODULE_CALL_FILE and code.co_name in _MODULE_CALL_FUNCS:
        return MODULE_CALL
    if filename.startswith(_TORCH_DIR):
        return TORCH_MODULE if filename.startswith(_TORCH_MODULES_DIR) else SKIP
    return USER


# Kinds of code objects, classified once and kept across traces.
_KINDS: dict[CodeType, int] = {}


def find_call_site(depth: int) -> tuple[CallPath, tuple[str, int] | None]:
    """(call path, (file, line) of user code) from `depth` frames above the caller.

    Only plain values are kept: holding frames would keep their locals alive.
    """
    kinds = _KINDS
    frame: FrameType | None = sys._getframe(depth + 1)
    path: list[tuple[CodeType, int]] = []
    source: tuple[str, int] | None = None
    in_path = True
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code)
        if kind is None:
            kind = kinds[code] = _classify(code)
        if kind == MODULE_CALL:
            if source is not None:
                break
            in_path = False
        elif kind != SKIP:
            if in_path:
                # f_lasti tells apart two calls on one line (a + b + c).
                path.append((code, frame.f_lasti))
            if kind == USER and source is None:
                source = (code.co_filename, frame.f_lineno)
                if not in_path:
                    break
        frame = frame.f_back
    return tuple(path), source


def describe_source(where: tuple[str, int] | None) -> tuple[str, str]:
    """("file.py:123", that line's text), or ("", "") when the op came from no user code."""
    if where is None:
        return "", ""
    filename, lineno = where
    return f"{filename}:{lineno}", linecache.getline(filename, lineno).strip()
