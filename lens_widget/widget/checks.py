"""Checks on values that come from the frontend, and quoting them back in errors.

Frontend messages are untrusted: an error names what was wrong with a value but never echoes
it whole (a 1 MB bad key must not come back as a 1 MB error).
"""

from __future__ import annotations

# The most characters of a bad value an error message repeats.
MAX_QUOTED = 200


def cut(text: str, limit: int = MAX_QUOTED) -> str:
    """`text`, or its first `limit` - 1 characters and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(value: object, limit: int = MAX_QUOTED) -> str:
    """`repr(value)`, cut to `limit` characters."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print (Python's 4300-digit limit)
        text = f"<{type(value).__name__} too large to show>"
    return cut(text, limit)


def require_int(name: str, value: object) -> int:
    """`value` if it is an int (bools are not), else ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {quote(value)}")
    return value


def check_index(name: str, value: object, size: int) -> int:
    """An int in [0, size), or ValueError naming the parameter."""
    index = require_int(name, value)
    if not 0 <= index < size:
        raise ValueError(f"{name} {quote(index)} out of range [0, {size})")
    return index
