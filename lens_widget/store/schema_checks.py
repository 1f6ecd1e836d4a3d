"""The checks log.json's schema is written with (schema.py, distributed_schema.py): small
combinators, each taking a JSON value and its path and raising LogFormatError naming the
path and the problem. They test types, ranges and names only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lens_widget.store.format import fail

Check = Callable[[Any, str], None]


def describe(value: Any) -> str:
    """`value` as an error message quotes it: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


# JSON integers have no bound; counts, sizes and indices beyond int64 are no real log's
# (and 10**400 overflowed later, in a float conversion).
_INT64_MAX = 2**63 - 1


def integer(minimum: int = 0) -> Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise fail(path, f"{describe(value)} is not an integer")
        if value < minimum:
            raise fail(path, f"{value} is less than {minimum}")
        if value > _INT64_MAX:
            raise fail(path, f"{str(value)[:20]}... is larger than any int64")

    return check


def number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise fail(path, f"{describe(value)} is not a non-negative number")


def string(pattern: str | None = None, non_empty: bool = False) -> Check:
    compiled = re.compile(pattern) if pattern else None

    def check(value: Any, path: str) -> None:
        if not isinstance(value, str):
            raise fail(path, f"{describe(value)} is not a string")
        if non_empty and not value:
            raise fail(path, "is empty")
        if compiled is not None and not compiled.fullmatch(value):
            raise fail(path, f"{describe(value)} does not match {pattern}")

    return check


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise fail(path, f"{describe(value)} is not true or false")


def anything(value: Any, path: str) -> None:
    """Checked later by the decoder of what it holds."""


def one_of(*allowed: Any) -> Check:
    def check(value: Any, path: str) -> None:
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise fail(path, f"{describe(value)} is not one of {', '.join(map(repr, allowed))}")

    return check


def nullable(inner: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)

    return check


def array(item: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise fail(path, f"{describe(value)} is not an array")
        for i, element in enumerate(value):
            item(element, f"{path}[{i}]")

    return check


def pair(first: Check, second: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) != 2:
            raise fail(path, f"{describe(value)} is not a pair [a, b]")
        first(value[0], f"{path}[0]")
        second(value[1], f"{path}[1]")

    return check


def record(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """An object with exactly these keys (optional ones may be left out)."""
    known = {**required, **(optional or {})}

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise fail(path, f"{describe(value)} is not an object")
        missing = [key for key in required if key not in value]
        if missing:
            raise fail(path, f"missing field(s) {', '.join(missing)}")
        unknown = [key for key in value if key not in known]
        if unknown:
            raise fail(path, f"unknown field(s) {', '.join(map(describe, unknown[:5]))}")
        for key, element in value.items():
            known[key](element, f"{path}.{key}")

    return check


def mapping(key_pattern: str, item: Check) -> Check:
    key_check = string(key_pattern)

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise fail(path, f"{describe(value)} is not an object")
        for key, element in value.items():
            key_check(key, f"{path} key")
            item(element, f"{path}.{key}")

    return check


def first_match(options: list[tuple[str, Check]]) -> Check:
    """An object told apart by which of these keys it has (the first key present decides)."""

    def check(value: Any, path: str) -> None:
        for key, inner in options:
            if isinstance(value, dict) and key in value:
                inner(value, path)
                return
        raise fail(path, f"{describe(value)} has none of the fields {[k for k, _ in options]}")

    return check


# The fields' common shapes
COUNT = integer(0)
POSITIVE = integer(1)
TEXT = string()
LABEL = string(non_empty=True)
SHAPE = array(COUNT)
TENSOR_ID = COUNT
