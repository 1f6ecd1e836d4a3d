"""Where in the user's code an op was called, found by walking the Python stack.

Two answers per op: the *call site* that identifies the op for folding passes (the first
frame outside torch's functional wrappers, torch's own nn.Module code included), and the
*source* a person wants to read (the first frame outside torch altogether).
"""

from __future__ import annotations

import linecache
import os
import sys
from types import CodeType, FrameType

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_MODULES_DIR = os.path.join(_TORCH_DIR, "nn", "modules") + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# Frame kinds: skipped entirely, torch's nn.Module code (a call site, not user code), user code.
SKIP, TORCH_MODULE, USER = 0, 1, 2


def _classify(filename: str) -> int:
    if filename.startswith(_OWN_DIR):
        return SKIP
    if filename.startswith(_TORCH_DIR):
        return TORCH_MODULE if filename.startswith(_TORCH_MODULES_DIR) else SKIP
    return USER


class CallSiteFinder:
    """Classifies each code object once, then walks frames with dictionary lookups."""

    def __init__(self) -> None:
        self._kinds: dict[CodeType, int] = {}

    def find(self, depth: int) -> tuple[tuple[CodeType, int] | None, tuple[str, int] | None]:
        """(call-site key, (file, line) of user code) from `depth` frames above the caller.

        Only plain values are kept: holding frames would keep their locals alive.
        """
        kinds = self._kinds
        frame: FrameType | None = sys._getframe(depth + 1)
        site: tuple[CodeType, int] | None = None
        while frame is not None:
            code = frame.f_code
            kind = kinds.get(code)
            if kind is None:
                kind = kinds[code] = _classify(code.co_filename)
            if kind != SKIP:
                if site is None:
                    # f_lasti tells apart two calls on one line (a + b + c).
                    site = (code, frame.f_lasti)
                if kind == USER:
                    return site, (code.co_filename, frame.f_lineno)
            frame = frame.f_back
        return site, None


def describe_source(where: tuple[str, int] | None) -> tuple[str, str]:
    """("file.py:123", that line's text), or ("", "") when the op came from no user code."""
    if where is None:
        return "", ""
    filename, lineno = where
    return f"{filename}:{lineno}", linecache.getline(filename, lineno).strip()
