"""Which activations a trace keeps: "all", None, a list of names, or a predicate."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lens_widget.log.records import OpRecord

SaveSpec = str | None | Iterable[str] | Callable[[OpRecord], bool]


class SavePolicy:
    """Decides per op, at the moment it runs, whether its outputs are kept.

    A list may name op labels (``linear_2_7`` for every pass, ``linear_2_7:3`` for one),
    module addresses (every op inside that module; ``blocks.0:2`` inside its 2nd call only,
    as ``intervene=`` takes them) and function names (``conv2d``).
    A predicate sees each op as it runs: its label carries the pass (``linear_2_7:1``, also
    for an op that will run once; ``layer`` is the label without it), and facts about what
    comes later (children, feeds_output, n_passes) are not known yet.
    """

    def __init__(self, spec: SaveSpec) -> None:
        self.keeps_nothing = spec is None
        self.keeps_all = spec == "all"
        self._predicate: Callable[[OpRecord], bool] | None = None
        self._names: frozenset[str] = frozenset()
        # (module address, pass) of names such as "blocks.0:2"
        self._module_passes: frozenset[tuple[str, int]] = frozenset()
        if spec is None or self.keeps_all:  # (spec is None: keeps_nothing)
            return
        if callable(spec):
            self._predicate = spec
        elif isinstance(spec, str):
            raise ValueError(
                f'save={spec!r}: use save="all", save=None, a list of labels / module '
                "addresses / function names, or a predicate on the op record"
            )
        else:
            try:
                names = frozenset(spec)
            except TypeError:
                raise TypeError(
                    "save must be 'all', None, a list of names or a callable, "
                    f"got {type(spec).__name__}"
                ) from None
            if not all(isinstance(n, str) for n in names):
                raise TypeError("save: every name in the list must be a string")
            self._names = names
            self._module_passes = frozenset(
                (address, int(number))
                for address, _, number in (n.rpartition(":") for n in names)
                if address and number.isdigit()
            )

    @property
    def names(self) -> frozenset[str]:
        """The names of a save list (empty for "all", None and predicates)."""
        return self._names

    @property
    def asks_predicate(self) -> bool:
        return self._predicate is not None

    def unmatched(self, names_in_log: set[str]) -> list[str]:
        """Names of a save list that matched no label, layer, function or module."""
        return sorted(self._names - names_in_log)

    def keeps(self, record: OpRecord) -> bool:
        if self.keeps_all:
            return True
        if self.keeps_nothing:
            return False
        if self._predicate is not None:
            return bool(self._predicate(record))
        names = self._names
        if record.layer in names or record.label in names or record.func in names:
            return True
        passes = self._module_passes
        return any(address in names or (address, n) in passes for address, n in record.module_stack)
