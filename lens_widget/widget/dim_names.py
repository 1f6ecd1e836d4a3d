"""What each dimension of an activation is (batch, channel, head, token, feature), from the
evidence the ops give, carried along the graph.

One pass over the log in execution order makes an axis per dim of every tensor and lets each
op join its output axes to its inputs' and say what some axes are (axis_rules.py); each class
of joined axes is then named by its strongest evidence (axis_book.py). So a name given where
it is known (an embedding's token axis, a conv's channel axis, an attention's head axis)
follows the tensor through the ops that keep, move, merge or split its dims, and one tensor
reads the same wherever it is shown (a ViT's residual stream is (batch, token, feature) at
its blocks, its MLP and its attention alike). A dim nothing names is "" here and "dim i" on
the wire.
"""

from __future__ import annotations

from collections.abc import Iterable

from lens_widget.log.gc_pause import gc_paused
from lens_widget.log.records import OpRecord
from lens_widget.widget.axis_book import AxisBook
from lens_widget.widget.axis_ops import Arg, Op
from lens_widget.widget.axis_rules import link_node

Names = tuple[str, ...]


def wire_names(names: Names) -> list[str]:
    """Names as sent to the frontend: unknown dims read "dim i"."""
    return [name or f"dim {i}" for i, name in enumerate(names)]


class DimNames:
    """Dim names of every output of every node of a log, computed once on first use."""

    def __init__(self, nodes: Iterable[OpRecord]) -> None:
        self._nodes = nodes
        self._book: AxisBook | None = None
        self._shapes: dict[str, tuple[tuple[int, ...], ...]] = {}

    def of(self, label: str, output: int = 0) -> Names:
        if self._book is None:
            with gc_paused():  # a pass making many small tuples: no collections of the log
                self._book = self._read()
        shapes = self._shapes.get(label, ())
        if output >= len(shapes):
            return ()
        return tuple(self._book.name((label, output, d)) for d in range(len(shapes[output])))

    def _read(self) -> AxisBook:
        book = AxisBook()
        sizes = book.sizes
        known: dict[tuple[str, int], Arg] = {}  # (label, output) -> its axes and shape
        for node in self._nodes:
            shapes = _shapes(node)
            label = node.label
            self._shapes[label] = shapes
            outputs = []
            for index, shape in enumerate(shapes):
                axes = tuple([(label, index, d) for d in range(len(shape))])
                sizes.update(zip(axes, shape, strict=True))
                known[label, index] = Arg("", axes, shape)
                outputs.append((axes, shape))
            args = []
            for parent, position, index in node.parent_args:
                seen = known.get((parent, index))
                if seen is not None:
                    args.append(Arg(position, seen.axes, seen.shape))
            link_node(book, Op(node, args, outputs))
        return book


def _shapes(node: OpRecord) -> tuple[tuple[int, ...], ...]:
    if node.shapes:
        return node.shapes
    return (node.shape,) if node.shape is not None else ()
