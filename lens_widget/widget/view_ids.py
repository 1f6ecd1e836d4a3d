"""Which node ids and module addresses a payload's two views hold, and how ids map between
them: the widget checks the frontend's `selected` / `expanded` against these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import traitlets

from lens_widget.widget.checks import cut, quote
from lens_widget.widget.group_keys import is_group_address, output_groups


class ViewIds:
    """The ids of one payload's unrolled and rolled views (a payload dict of payload.py)."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        unrolled = payload["unrolled"]["nodes"]
        rolled = payload["rolled"]["nodes"]
        self.ids = {
            "unrolled": {n["id"] for n in unrolled},
            "rolled": {n["id"] for n in rolled},
        }
        self._to_rolled = {p: n["id"] for n in rolled for p in n["passes"]}
        self._to_unrolled = {n["id"]: n["passes"][0] for n in rolled if n["passes"]}
        # rolled node -> the labels of its passes
        self.rolled_passes: dict[str, list[str]] = {n["id"]: n["passes"] for n in rolled}
        self._modules = {m["address"] for m in payload["modules"]}
        self._output_groups = output_groups(n["id"] for n in unrolled if n["kind"] == "output")

    def convert(self, value: str, view: str) -> str | None:
        """`value` as an id of `view`: ids of the other view map to their layer / first pass."""
        if value in self.ids[view]:
            return value
        mapped = (self._to_rolled if view == "rolled" else self._to_unrolled).get(value)
        return mapped if mapped in self.ids[view] else None

    def check_selected(self, value: str, view: str) -> str:
        """The id `selected` becomes in `view`, or a TraitError naming what ids look like."""
        if value == "":
            return value
        converted = self.convert(value, view)
        if converted is None:
            example = next(iter(self.ids[view]), "")
            raise traitlets.TraitError(
                f"selected: unknown node id {quote(value)} in the {view} view "
                f"(ids look like {example!r}; see w.graph[{view!r}]['nodes'])"
            )
        return converted

    def check_expanded(self, addresses: list[str]) -> list[str]:
        """`addresses` without repeats, or a TraitError naming the unknown ones."""
        unknown = [
            a for a in addresses if not is_group_address(a, self._modules, self._output_groups)
        ]
        if unknown:
            shown = cut(", ".join(quote(a) for a in unknown[:5]))
            raise traitlets.TraitError(
                f"expanded: unknown module addresses {shown} (module addresses, a stack of "
                "repeated blocks such as 'transformer.h.0×24', an output group such as "
                "'output.past_key_values', or a chunk of a huge box such as 'encoder#1-100')"
            )
        return list(dict.fromkeys(addresses))  # drop repeats, keep order
