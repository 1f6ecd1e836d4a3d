"""Timing each op: ``trace(..., timing=True)``, a Feature (features.py) of the recorder.

Every call takes the careful path (bookkeeping with torch functions disabled), so only the
torch call itself is inside the clock; its time goes on the op's record (``time_ms``).
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

import torch

from lens_widget.capture.features import Feature, plain_call
from lens_widget.log.records import OpRecord


class Timing(Feature):
    """Times each torch call; the record of the op gets its milliseconds."""

    careful = True

    def __init__(self) -> None:
        self._elapsed_ms = 0.0  # of the last timed torch call

    def call(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> Any:
        # CUDA runs asynchronously: wait for earlier work, then for this op's.
        sync = torch.cuda.is_initialized()
        if sync:
            torch.cuda.synchronize()
        start = perf_counter()
        out = plain_call(func, args, kwargs)
        if sync:
            torch.cuda.synchronize()
        self._elapsed_ms = (perf_counter() - start) * 1000.0
        return out

    def result(self, node: OpRecord | None, out: Any) -> Any:
        if node is not None:
            node.time_ms = self._elapsed_ms
        return out
