"""Placeholder until the frontend lands (replaced below)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def bench_widget(quick: bool, log: Callable[[str], None] = print) -> dict[str, Any]:
    return {"skipped": "frontend not built yet"}
