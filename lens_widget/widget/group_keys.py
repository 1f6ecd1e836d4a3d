"""Addresses the `expanded` trait may hold besides module addresses: the frontend's own
groups (js/src/model/folds.ts), which a user can also open from Python.

- a repeated-block stack: its first block's address, "×", the number of blocks
  ("transformer.h.0×24");
- an output group: "output.<name>" for the outputs "output.<name>.…" of one kind
  ("output.past_key_values" holds every KV-cache tensor).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_STACK = re.compile(r"^(?P<first>.+)×(?P<count>\d+)$")


def stack_address(group: list[str]) -> str:
    return f"{group[0]}×{len(group)}"


def output_groups(output_ids: Iterable[str]) -> set[str]:
    """ "output.<name>" for every name that two or more outputs share."""
    seen: dict[str, int] = {}
    for label in output_ids:
        parts = label.split(".")
        if len(parts) >= 3 and parts[0] == "output":
            key = f"output.{parts[1]}"
            seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n >= 2}


def is_group_address(address: str, modules: set[str], outputs: set[str]) -> bool:
    """A module, a stack of blocks starting at a module, or an output group."""
    if address in modules or address in outputs:
        return True
    match = _STACK.match(address)
    return match is not None and match["first"] in modules and int(match["count"]) >= 2
