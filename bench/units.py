"""Numbers as the report and the targets print them; a missing figure prints as "-"."""

from __future__ import annotations

import math
from typing import Any


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def ms(x: Any) -> str:
    if _missing(x):
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def ratio(x: Any) -> str:
    if _missing(x):
        return "-"
    return f"{x:.2f}x" if x < 10 else f"{x:.0f}x"


def mib(x: Any) -> str:
    if _missing(x):
        return "-"
    return f"{x / 2**20:,.1f}"


def us(x: Any) -> str:
    return "-" if _missing(x) else f"{x:,.0f}"


def mib2(x: Any) -> str:
    """MiB with two decimals: for sizes well under 1 MiB."""
    return "-" if _missing(x) else f"{x / 2**20:,.2f}"
