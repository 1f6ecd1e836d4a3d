"""What an op's axes look like to the rules that link them (axis_rules.py, axis_moves.py):
its tensor arguments and outputs, each with its axes (axis_book.py) and shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from lens_widget.log.records import OpRecord
from lens_widget.widget.axis_book import Axis, AxisBook


class Arg(NamedTuple):
    """A tensor argument of an op: where it sat, its axes and shape."""

    position: str
    axes: tuple[Axis, ...]
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Op:
    node: OpRecord
    args: Sequence[Arg]
    outputs: Sequence[tuple[tuple[Axis, ...], tuple[int, ...]]]  # (axes, shape) per output

    def arg(self, position: str) -> Arg | None:
        return next((a for a in self.args if a.position == position), None)

    @property
    def first(self) -> Arg | None:
        return self.arg("0") or (self.args[0] if self.args else None)

    def call_arg(self, index: int, keyword: str, default: Any = None) -> Any:
        """The call's argument `index` (after the tensor) or keyword, as recorded."""
        call = self.node.replay[0] if self.node.replay is not None else None
        if call is None:
            return default
        if keyword in call.kwargs:
            return call.kwargs[keyword]
        return call.args[index] if index < len(call.args) else default


Rule = Callable[[AxisBook, Op], None]


def align(book: AxisBook, out: Arg | tuple[tuple[Axis, ...], tuple[int, ...]], src: Arg,
          like: bool = False) -> None:  # fmt: skip
    """Right-aligned (as broadcasting lines them up): dims of one size are one axis (size-1
    dims only when the shapes are equal); with `like`, a dim that changed size is like its
    source (a slice, a resampling)."""
    axes, shape = out[-2:]  # an Arg, or (axes, shape)
    equal = shape == src.shape
    for o, s, o_size, s_size in zip(reversed(axes), reversed(src.axes), reversed(shape),
                                    reversed(src.shape), strict=False):  # fmt: skip
        if o_size == s_size and (o_size != 1 or equal):
            book.same(o, s)
        elif like and o_size != 1 and s_size != 1:
            book.like(o, s)
