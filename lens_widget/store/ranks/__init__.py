"""`lw.load_ranks`: the per-rank saves of one step, loaded together."""

from lens_widget.store.ranks.ranks import MissingRanksWarning, load_ranks

__all__ = ["MissingRanksWarning", "load_ranks"]
