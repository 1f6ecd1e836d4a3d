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

from lens_widget.log.records import OpRecord
from lens_widget.widget.axis_book import Axis, AxisBook
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
            self._book = self._read()
        shapes = self._shapes.get(label, ())
        if output >= len(shapes):
            return ()
        return tuple(self._book.name((label, output, d)) for d in range(len(shapes[output])))

    def _read(self) -> AxisBook:
        book = AxisBook()
        for node in self._nodes:
            shapes = _shapes(node)
            self._shapes[node.label] = shapes
            outputs = []
            for index, shape in enumerate(shapes):
                axes = _axes(node.label, index, len(shape))
                for axis, size in zip(axes, shape, strict=True):
                    book.sizes[axis] = size
                outputs.append((axes, shape))
            args = []
            for parent_arg in node.parent_args:
                parent_shapes = self._shapes.get(parent_arg.parent, ())
                index = parent_arg.output_index
                if index < len(parent_shapes):
                    shape = parent_shapes[index]
                    axes = _axes(parent_arg.parent, index, len(shape))
                    args.append(Arg(parent_arg.position, axes, shape))
            link_node(book, Op(node, args, outputs))
        return book


def _axes(label: str, output: int, rank: int) -> tuple[Axis, ...]:
    return tuple((label, output, d) for d in range(rank))


def _shapes(node: OpRecord) -> tuple[tuple[int, ...], ...]:
    if node.shapes:
        return node.shapes
    return (node.shape,) if node.shape is not None else ()
