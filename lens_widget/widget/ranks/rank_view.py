"""The rank view of a LensWidget (``LensWidget.from_logs``): the logs of one distributed step,
one per rank, in one graph with a rank picker and a comparison of two ranks.

A mixin of LensWidget (its "showRank" request handler is found by name, like the others).
The widget shows one rank's log at a time: its payload (values, gradients, collectives'
bytes) and every request (activation, metrics) answer for that rank; the frontend keeps the
layout when only the rank changes (js/src/ranks/). Comparing two ranks is LensWidget.compare
of the two logs: the shown rank is A, the other B.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

import traitlets

from lens_widget.compare.comparison import compare
from lens_widget.log.model_log import ModelLog
from lens_widget.widget import protocol, requests
from lens_widget.widget.checks import quote

NO_COMPARISON = -1


class RankView(traitlets.HasTraits):
    """What LensWidget adds for several ranks: `rank` (the rank shown), `compare_rank` (the
    rank compared with, -1 for none), settable from Python, and the "showRank" request."""

    _ranks: dict[int, ModelLog] | None = None
    _setting_both = False
    _rank_payloads: dict[int, Any] | None = None  # each rank's plain payload, built once
    # The rank shown (-1 in a widget of one log) and the rank it is compared with (-1: none).
    # Not synced: the frontend reads both from the graph payload (GraphPayload.ranks).
    rank = traitlets.Int(-1)
    compare_rank = traitlets.Int(NO_COMPARISON)

    @classmethod
    def from_logs(cls, logs: Mapping[int, ModelLog], **widget_kwargs: Any) -> Self:
        """The logs of one distributed step, {rank: ModelLog} (``lw.load_ranks``), as one
        graph with a rank picker: each rank's activations, gradients and overlays on the same
        layout, and "compare ranks" (per-op relative difference, as ``LensWidget.compare``).
        ``w.rank = 1`` shows rank 1; ``w.compare_rank = 0`` compares it with rank 0."""
        if not isinstance(logs, Mapping) or not logs:
            raise ValueError("from_logs takes {rank: ModelLog} with at least one rank")
        for rank, log in logs.items():
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
                raise TypeError(f"from_logs: ranks are integers >= 0, got {quote(rank)}")
            if not isinstance(log, ModelLog):
                raise TypeError(f"from_logs: rank {rank} is a {type(log).__name__}, not a ModelLog")
        ranks = dict(sorted(logs.items()))
        first = next(iter(ranks))
        widget = cls(None, model_log=ranks[first], **widget_kwargs)  # LensWidget's constructor
        widget._ranks = ranks
        widget.rank = first  # shows it, with the rank picker (the observer below)
        return widget

    def ranks_info(self) -> protocol.RanksInfo | None:
        """GraphPayload.ranks: the ranks there are and which are shown (None: one log)."""
        if self._ranks is None:
            return None
        sizes = {log.world_size for log in self._ranks.values()} - {None}
        other = self._compared
        return {
            "ranks": list(self._ranks),
            "worldSize": sizes.pop() if len(sizes) == 1 else None,
            "shown": self._shown,
            # a rank compared with itself is no comparison
            "compareWith": None if other in (NO_COMPARISON, self._shown) else other,
        }

    # the traits' values, typed (traitlets' Int reads as int | object to pyright)
    @property
    def _shown(self) -> int:
        return int(self.rank)  # pyright: ignore[reportArgumentType]

    @property
    def _compared(self) -> int:
        return int(self.compare_rank)  # pyright: ignore[reportArgumentType]

    @property
    def rank_logs(self) -> dict[int, ModelLog] | None:
        """{rank: ModelLog} of a widget made by from_logs, else None."""
        return None if self._ranks is None else dict(self._ranks)

    @traitlets.validate("rank", "compare_rank")
    def _validate_rank(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        name = proposal["trait"].name
        if self._ranks is None:
            if value == proposal["trait"].default_value:
                return value
            raise traitlets.TraitError("this widget shows one log: make it with from_logs")
        if value not in self._ranks and not (name == "compare_rank" and value == NO_COMPARISON):
            raise traitlets.TraitError(f"{name} {value}: the ranks shown are {list(self._ranks)}")
        return value

    @traitlets.observe("rank", "compare_rank")
    def _on_rank(self, change: dict[str, Any]) -> None:
        if self._ranks is not None and self.rank in self._ranks and not self._setting_both:
            self._show_ranks()

    def _show_ranks(self) -> None:
        """Show rank `rank`'s log, compared with `compare_rank`'s when that is another rank."""
        assert self._ranks is not None
        shown = self._ranks[self._shown]
        other = self._compared
        # requests are answered on the comm's thread meanwhile (cell_gate.py): not mid-swap
        with self._requests_lock:  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's
            comparison = None
            if other != NO_COMPARISON and other != self._shown:
                comparison = compare(shown, self._ranks[other])
            self._comparison = comparison
            self._diffs = None if comparison is None else {d.label: d for d in comparison}
            # LensWidget rebuilds a payload for a log other than its last: keep each rank's
            cache = self._rank_payloads = self._rank_payloads or {}
            if self._shown in cache:
                self._plain = cache[self._shown]
            self._set_log(shown)  # pyright: ignore[reportAttributeAccessIssue]  # LensWidget's: adds ranks_info()
            cache[self._shown] = self._plain

    def _show_rank(self, params: object) -> requests.Answer:
        """The "showRank" request: the rank picker's choice (rank, and compareWith or none)."""
        if self._ranks is None:
            raise requests.RequestError("this widget shows one log (from_logs shows several)")
        p = requests.request_params(params, {"rank", "compareWith"}, {"rank"})
        wanted = [p["rank"], p.get("compareWith", NO_COMPARISON)]
        for name, value in zip(("rank", "compareWith"), wanted, strict=True):
            if value == NO_COMPARISON and name == "compareWith":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value not in self._ranks:
                raise requests.RequestError(
                    f"{name} {quote(value)}: the ranks shown are {list(self._ranks)}"
                )
        self._setting_both = True  # one new graph for both traits, not one each
        try:
            self.rank, self.compare_rank = wanted
        finally:
            self._setting_both = False
        self._show_ranks()
        return {"ok": True}, []
