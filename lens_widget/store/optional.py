"""Optional dependencies (extras): imported when a feature needs them, with an install hint."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str) -> ModuleType:
    """`import module`, or an ImportError saying which lens_widget extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"this needs the optional package {module!r}: pip install lens_widget[{extra}]"
        ) from err
