"""Addresses the `expanded` trait may hold besides module addresses: the frontend's own
groups (js/src/graph/folds.ts), which a user can also open from Python. Both sides build
keys alike: tests/js/fixtures/group_keys.json is read by the tests of each.

- a repeated-block stack: its first block's address, "×", the number of blocks
  ("transformer.h.0×24");
- an output group: "output.<name>" for the outputs "output.<name>.…" of one kind
  ("output.past_key_values" holds every KV-cache tensor);
- a chunk of a box with too many children to draw at once (js/src/graph/chunks.ts): the box's
  address ("" for the model itself), "#", the 1-based positions of its first and last child
  ("#1-100", "encoder.layers#101-200").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_STACK = re.compile(r"^(?P<first>.+)×(?P<count>\d+)$")
_CHUNK = re.compile(r"^(?P<box>.*)#(?P<first>\d+)-(?P<last>\d+)$")


def stack_address(group: list[str]) -> str:
    return f"{group[0]}×{len(group)}"


def chunk_address(box: str, first: int, last: int) -> str:
    """The address of children `first`..`last` (1-based) of the box at address `box`."""
    return f"{box}#{first}-{last}"


def output_kind(label: str) -> str | None:
    """ "output.past_key_values" for "output.past_key_values.layers.0.keys"; None for
    "output.logits" (an output of a kind of its own)."""
    parts = label.split(".")
    return f"output.{parts[1]}" if len(parts) >= 3 and parts[0] == "output" else None


def output_groups(output_ids: Iterable[str]) -> set[str]:
    """ "output.<name>" for every name that two or more outputs share."""
    seen: dict[str, int] = {}
    for label in output_ids:
        key = output_kind(label)
        if key is not None:
            seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n >= 2}


def is_group_address(address: str, modules: set[str], outputs: set[str]) -> bool:
    """A module, a stack of blocks starting at a module, an output group, or a chunk of one of
    them (or of the model itself)."""
    if address in modules or address in outputs:
        return True
    chunk = _CHUNK.match(address)
    if chunk is not None:
        box = chunk["box"]
        ordered = 1 <= int(chunk["first"]) <= int(chunk["last"])
        if box == "":
            return ordered
        return ordered and _CHUNK.match(box) is None and is_group_address(box, modules, outputs)
    match = _STACK.match(address)
    return match is not None and match["first"] in modules and int(match["count"]) >= 2
