"""Tensor ops that torch's own modules run while they are being imported: not the model's.

torch imports some modules lazily, the first time a function needs them: on torch 2.6 the
first ``torch.utils.checkpoint`` call (any ``torch._disable_dynamo`` function) imports
``torch._dynamo``, whose import runs some fifty tensor ops (``ones``, ``abs``, ``__rpow__``...
in ``populate_builtin_to_tensor_fn_map``). Inside a trace they would be recorded as the
model's first ops, on the first trace of a process only.

``IMPORTS_RUNNING`` is CPython's table of module import locks, empty unless an import is
running, so the per-op check costs one truthiness test. Then the caller's frames are read:
CPython marks a module whose code runs for its import (``__spec__._initializing``, which its
own import machinery reads). Only torch's modules are passed over, so a user's script that
traces while it is imported still records its model.
"""

from __future__ import annotations

from importlib import _bootstrap
from types import FrameType
from typing import Any

# Module name -> its import lock, while that import runs (a Python without the table: never
# truthy, so nothing is passed over).
IMPORTS_RUNNING: dict[str, Any] = getattr(_bootstrap, "_module_locks", {})

# How many frames up from a torch call its import-time caller may be: the import's own
# function, then Tensor's Python operator wrappers (__rpow__ ...) between them.
_MAX_DEPTH = 6


def run_by_torch_import(frame: FrameType | None) -> bool:
    """Whether `frame` (the caller of a torch function) or one of its few callers is a torch
    module's code running for that module's import."""
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return False
        spec = frame.f_globals.get("__spec__")
        if getattr(spec, "_initializing", False):
            name = getattr(spec, "name", "")
            return name == "torch" or name.startswith("torch.")
        frame = frame.f_back
    return False
