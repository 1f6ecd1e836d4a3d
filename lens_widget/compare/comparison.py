"""compare(a, b): two traces of the same code, matched op by op.

Ops are matched by layer and pass (their labels are stable across runs of the same code),
so a run on other inputs, other weights, another dtype or another device lines up with the
first. Values are compared where both sides saved them and the shapes agree.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from dataclasses import dataclass

from lens_widget.compare.tensor_diff import close_everywhere, value_diffs
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord

_TABLE_ROWS = 10


@dataclass
class OpDiff:
    """One op of run A and the same op of run B.

    ``max_abs``, ``rel_l2`` and ``cosine`` (see ``ValueDiff``) are None when the values could
    not be compared; ``reason`` then says why (not saved on a side, shapes differ).
    """

    label: str  # A's label; B's is ``b.label`` (they differ only in a ":1" suffix)
    a: OpRecord
    b: OpRecord
    max_abs: float | None = None
    rel_l2: float | None = None
    cosine: float | None = None
    reason: str | None = None

    @property
    def func(self) -> str:
        return self.a.func

    @property
    def comparable(self) -> bool:
        return self.max_abs is not None

    @property
    def shape_mismatch(self) -> bool:
        return self.a.shapes != self.b.shapes

    @property
    def dtype_mismatch(self) -> bool:
        if self.a.activations is not None and self.b.activations is not None:
            return [t.dtype for t in self.a.activations] != [t.dtype for t in self.b.activations]
        return self.a.dtype != self.b.dtype

    def __repr__(self) -> str:
        if not self.comparable:
            return f"<OpDiff {self.label}: not compared ({self.reason})>"
        return (
            f"<OpDiff {self.label}: max_abs={self.max_abs:.3g} rel_l2={self.rel_l2:.3g} "
            f"cosine={self.cosine:.6g}>"
        )


class LogComparison:
    """The result of ``lw.compare(a, b)``: ``cmp[label]`` is an ``OpDiff``; iterating yields
    the ops both runs have, in A's execution order; ``only_a`` / ``only_b`` list the labels
    of ops that ran on one side only."""

    def __init__(self, a: ModelLog, b: ModelLog) -> None:
        self.a, self.b = a, b
        ops_b = {(op.layer, op.pass_index): op for op in b.ops}
        matched = [(op, ops_b.pop((op.layer, op.pass_index), None)) for op in a.ops]
        self.only_a: list[str] = [op_a.label for op_a, op_b in matched if op_b is None]
        self.only_b: list[str] = [op.label for op in ops_b.values()]
        self._diffs = [pair_diff(op_a, op_b) for op_a, op_b in matched if op_b is not None]
        self._by_label = {d.label: d for d in self._diffs}
        self._by_label_b = {d.b.label: d for d in self._diffs}
        self._compute_values()

    def _compute_values(self) -> None:
        todo = [d for d in self._diffs if d.reason is None]
        pairs = [(d.a.activations or (), d.b.activations or ()) for d in todo]
        for diff, values in zip(todo, value_diffs(pairs), strict=True):
            diff.max_abs, diff.rel_l2, diff.cosine = values.max_abs, values.rel_l2, values.cosine

    # ---- access ----------------------------------------------------------------------

    @property
    def diffs(self) -> list[OpDiff]:
        """Every matched op, in A's execution order."""
        return list(self._diffs)

    def __iter__(self) -> Iterator[OpDiff]:
        return iter(self._diffs)

    def __len__(self) -> int:
        return len(self._diffs)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # pyright: ignore[reportArgumentType]  # any key: __getitem__ raises KeyError for the wrong type
        except (KeyError, IndexError, TypeError):
            return False
        return True

    def __getitem__(self, key: str | int) -> OpDiff:
        """By A's or B's op label, a layer that ran once, a module address (the op that
        produced its output), or a position among the matched ops."""
        if not isinstance(key, str):
            return self._diffs[operator.index(key)]
        found = self._by_label.get(key) or self._by_label_b.get(key)
        if found is not None:
            return found
        why_not = ""
        for log, side in ((self.a, "A"), (self.b, "B")):
            try:
                node = log[key]
            except KeyError as err:
                why_not = why_not or str(err.args[0])
                continue
            table = self._by_label if side == "A" else self._by_label_b
            if node.label in table:
                return table[node.label]
            if node.kind != "op":
                raise KeyError(f"{key!r} is a {node.kind} of {side}, not an op: compare ops")
            raise KeyError(f"op {key!r} ran only in {side}: it has nothing to compare with")
        raise KeyError(f"{key!r} is not an op label or module address of either log (A: {why_not})")

    # ---- questions -------------------------------------------------------------------

    def first_divergence(self, atol: float = 1e-5, rtol: float = 1e-5) -> OpDiff | None:
        """The first op, in A's execution order, whose values differ somewhere by more than
        ``atol + rtol * |b|`` (NaN matches NaN), or whose shapes differ; None if none.
        Ops not saved on a side cannot be checked and are passed over; when no op at all
        could be checked, ValueError says why (None would read as "no difference")."""
        checked = False
        for diff in self._diffs:
            if diff.shape_mismatch:
                return diff
            if diff.max_abs is None:  # not saved on a side
                continue
            checked = True
            if diff.max_abs <= atol:  # within atol everywhere, whatever rtol says
                continue
            if math.isnan(diff.max_abs) or not all(
                close_everywhere(x, y, atol=atol, rtol=rtol)
                for x, y in zip(diff.a.activations or (), diff.b.activations or (), strict=True)
            ):
                return diff
        if not checked and self._diffs:
            raise ValueError(
                f"no op could be compared ({self._diffs[0].reason}, and so on): trace both "
                "runs with save='all', or save= the same ops in each"
            )
        return None

    def top(self, n: int = _TABLE_ROWS, by: str = "rel_l2") -> list[OpDiff]:
        """The n compared ops that differ most by ``by`` ("max_abs", "rel_l2"; "cosine"
        sorts lowest first). NaN ranks first."""
        if by not in ("max_abs", "rel_l2", "cosine"):
            raise ValueError(f"by must be 'max_abs', 'rel_l2' or 'cosine', not {by!r}")
        sign = 1.0 if by == "cosine" else -1.0

        def rank(diff: OpDiff) -> float:
            value = getattr(diff, by)
            return -math.inf if math.isnan(value) else sign * value

        return sorted((d for d in self._diffs if d.comparable), key=rank)[:n]

    def __repr__(self) -> str:
        compared = [d for d in self._diffs if d.comparable]
        lines = [
            f"<LogComparison {self.a.model_class} vs {self.b.model_class}: {len(self)} ops "
            f"matched, {len(compared)} compared; only in A: {len(self.only_a)}, "
            f"only in B: {len(self.only_b)}>"
        ]
        mismatched = [d.label for d in self._diffs if d.shape_mismatch]
        if mismatched:
            lines.append(f"  shapes differ: {', '.join(mismatched[:5])}")
        top = [d for d in self.top() if d.max_abs != 0]
        if compared and not top:
            lines.append(f"  all {len(compared)} compared ops have equal values")
        if top:
            width = max(len(d.label) for d in top)
            lines.append(f"  {'op'.ljust(width)}  {'max_abs':>10}  {'rel_l2':>10}  {'cosine':>10}")
            lines.extend(
                f"  {d.label.ljust(width)}  {d.max_abs:>10.3g}  {d.rel_l2:>10.3g}  "
                f"{d.cosine:>10.6f}"
                for d in top
            )
        return "\n".join(lines)


def pair_diff(a: OpRecord, b: OpRecord) -> OpDiff:
    """The pair (an op and its match, or a source present in both runs), with the reason
    its values cannot be compared (if any)."""
    reason = None
    if a.activations is None or b.activations is None:
        missing = [side for side, op in (("A", a), ("B", b)) if op.activations is None]
        reason = f"not saved in {' and '.join(missing)}"
    elif a.shapes != b.shapes or len(a.activations) != len(b.activations):
        reason = f"shapes differ: {list(a.shapes)} vs {list(b.shapes)}"
    return OpDiff(a.label, a, b, reason=reason)


def compare(a: ModelLog, b: ModelLog) -> LogComparison:
    """Compare two traces op by op (see ``LogComparison``)."""
    if not isinstance(a, ModelLog) or not isinstance(b, ModelLog):
        raise TypeError(
            "compare(a, b) takes two ModelLogs (lw.trace(...)), got "
            f"{type(a).__name__} and {type(b).__name__}"
        )
    return LogComparison(a, b)
