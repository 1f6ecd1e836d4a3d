"""How ops that move dims move them: transpose / permute / t / movedim reorder them (in the
order their ints give), view / reshape / flatten merge and split runs of them (read from the
sizes alone), expand and indexing keep, drop or add them, unbind drops one, cat and stack
join tensors along one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from lens_widget.log.replay import TensorSlot
from lens_widget.widget.axis_book import AxisBook
from lens_widget.widget.axis_ops import Arg, Op, Rule, align

_SWAP = frozenset({"transpose", "swapaxes", "swapdims"})


def moved_order(
    func: str, args: Sequence[Any], kwargs: Mapping[str, Any], rank: int
) -> list[int] | None:
    """out dim i is input dim order[i]; None when the call's ints do not say."""
    ints = [a for a in args if isinstance(a, int)] + [
        v for v in kwargs.values() if isinstance(v, int)
    ]
    order = list(range(rank))
    if func == "t":
        return [1, 0] if rank == 2 else order
    if func in _SWAP and len(ints) == 2 and rank:
        a, b = (d % rank for d in ints)
        order[a], order[b] = order[b], order[a]
        return order
    if func == "permute":
        dims = list(args)
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = list(dims[0])
        if "dims" in kwargs:
            dims = list(kwargs["dims"])
        if not all(isinstance(d, int) for d in dims) or sorted(d % rank for d in dims) != order:
            return None
        return [d % rank for d in dims]
    if func == "movedim" and len(ints) == 2 and rank:
        source, destination = (d % rank for d in ints)
        order.remove(source)
        order.insert(destination, source)
        return order
    return None


def reshape_groups(
    before: Sequence[int], after: Sequence[int]
) -> Iterator[tuple[list[int], list[int]]]:
    """The smallest runs of dims whose sizes multiply to the same on both sides: ([2], [2]) a
    dim kept, ([1, 2], [1]) two merged, ([2], [2, 3]) one split. A size-1 dim goes with the
    run of the next dim that is not (the last run, at the end), so a batch of one travels
    with its tokens. Nothing when the sizes do not match up."""
    if _product(before) != _product(after):
        return
    b = [i for i, size in enumerate(before) if size != 1]
    a = [j for j, size in enumerate(after) if size != 1]
    runs: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(b) and j < len(a):
        gi, gj = [b[i]], [a[j]]
        pa, pb = before[b[i]], after[a[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb and i < len(b):
                pa *= before[b[i]]
                gi.append(b[i])
                i += 1
            elif pb < pa and j < len(a):
                pb *= after[a[j]]
                gj.append(a[j])
                j += 1
            else:
                return
        runs.append((gi, gj))
    if not runs:
        return
    yield from zip(_with_ones(len(before), [r[0] for r in runs]),
                   _with_ones(len(after), [r[1] for r in runs]), strict=True)  # fmt: skip


def _with_ones(rank: int, runs: list[list[int]]) -> list[list[int]]:
    """The runs, each from the dim after the previous run's last: the size-1 dims between."""
    out = []
    start = 0
    for n, run in enumerate(runs):
        end = run[-1] + 1 if n < len(runs) - 1 else rank
        out.append(list(range(start, end)))
        start = end
    return out


def _product(sizes: Sequence[int]) -> int:
    total = 1
    for size in sizes:
        total *= size
    return total


def _moved(book: AxisBook, op: Op) -> None:
    """transpose / permute / t / movedim: the same axes, reordered."""
    x = op.first
    axes, _ = op.outputs[0]
    call = op.node.replay[0] if op.node.replay is not None else None
    if x is None or call is None or len(x.axes) != len(axes):
        return
    order = moved_order(op.node.func, call.args[1:], call.kwargs, len(axes))
    if order is not None:
        for o, i in zip(axes, order, strict=True):
            book.same(o, x.axes[i])


def _reshaped(book: AxisBook, op: Op) -> None:
    """view / reshape / flatten / squeeze...: kept dims are the same axes, merged dims are a
    merge of theirs, a merged axis split back into its sizes is its parts again, and a split
    axis is recorded as the merge of its pieces (so that joining them back finds it)."""
    x = op.first
    axes, shape = op.outputs[0]
    if x is None:
        return
    for before, after in reshape_groups(x.shape, shape):
        while len(before) > 1 and len(after) > 1 and x.shape[before[0]] == shape[after[0]] == 1:
            book.same(axes[after[0]], x.axes[before[0]])  # a leading size-1 dim on both sides
            before, after = before[1:], after[1:]
        src = tuple(x.axes[i] for i in before)
        dst = tuple(axes[j] for j in after)
        src_sizes = [x.shape[i] for i in before]
        dst_sizes = [shape[j] for j in after]
        if src_sizes == dst_sizes:
            for d, s in zip(dst, src, strict=True):
                book.same(d, s)
            continue
        src_big = [a for a, n in zip(src, src_sizes, strict=True) if n != 1]
        dst_big = [a for a, n in zip(dst, dst_sizes, strict=True) if n != 1]
        if len(src_big) == 1 and len(dst_big) == 1:
            book.same(dst_big[0], src_big[0])  # the same dim, size-1 dims dropped or added
        if len(dst_big) == 1 and len(src) > len(dst):
            book.merged(dst_big[0], src)
        elif len(src_big) == 1:
            parts = book.parts_of(src_big[0])
            if parts is not None and [book.sizes.get(p) for p in parts] == dst_sizes:
                for d, p in zip(dst, parts, strict=True):
                    book.same(d, p)
            elif len(dst_big) > 1:
                book.merged(src_big[0], dst)


def _expand(book: AxisBook, op: Op) -> None:
    """expand: a size-1 dim made n is a new axis (never the batch it was made to match)."""
    x = op.first
    if x is not None:
        align(book, op.outputs[0], x)


def _getitem(book: AxisBook, op: Op) -> None:
    """x[...]: ints drop dims, slices keep them (like them when shorter), None adds them."""
    x = op.first
    index = op.call_arg(1, "index")
    axes, shape = op.outputs[0]
    if x is None:
        return
    if isinstance(index, TensorSlot):  # x[ids]: ids' dims, then x's other dims
        rest = Arg("", x.axes[1:], x.shape[1:])
        if len(shape) >= len(rest.shape):
            n = len(rest.shape)
            align(book, (axes[len(axes) - n :], shape[len(shape) - n :]), rest)
        return
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (TensorSlot, list, bool)) for i in items):
        return
    if any(not isinstance(i, (int, slice)) and i is not None and i is not Ellipsis for i in items):
        return
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    expanded: list[Any] = []
    for item in items:
        expanded += [slice(None)] * (len(x.shape) - used) if item is Ellipsis else [item]
    expanded += [slice(None)] * (len(x.shape) - sum(1 for i in expanded if i is not None))
    i = o = 0
    for item in expanded:
        if item is None:
            o += 1
        elif isinstance(item, int):
            i += 1
        else:
            if o >= len(axes) or i >= len(x.axes):
                return
            if shape[o] == x.shape[i]:
                book.same(axes[o], x.axes[i])
            elif shape[o] != 1:
                book.like(axes[o], x.axes[i])
            i, o = i + 1, o + 1


def _unbind(book: AxisBook, op: Op) -> None:
    x = op.first
    dim = op.call_arg(1, "dim", 0)
    if x is None or not isinstance(dim, int) or not x.shape:
        return
    dim %= len(x.shape)
    rest = Arg("", x.axes[:dim] + x.axes[dim + 1 :], x.shape[:dim] + x.shape[dim + 1 :])
    for out in op.outputs:
        align(book, out, rest)


def _joined(book: AxisBook, op: Op) -> None:
    """cat keeps every dim but the one it joins along (like its pieces'); stack adds one."""
    axes, shape = op.outputs[0]
    dim = op.call_arg(1, "dim", 0)
    if not isinstance(dim, int):
        return
    dim %= len(shape)
    stack = op.node.func == "stack"
    for arg in op.args:
        kept = list(range(len(shape)))
        del kept[dim]
        own = kept if stack else list(range(len(shape)))
        if len(arg.shape) != len(own):
            continue
        for i, o in enumerate(own):
            if o == dim and not stack:
                if arg.shape[i] != 1:
                    book.like(axes[o], arg.axes[i])
            elif shape[o] == arg.shape[i]:
                book.same(axes[o], arg.axes[i])


MOVE_RULES: dict[str, Rule] = {
    **dict.fromkeys(("transpose", "swapaxes", "swapdims", "t", "permute", "movedim"), _moved),
    **dict.fromkeys(
        (
            "view",
            "reshape",
            "flatten",
            "unflatten",
            "view_as",
            "reshape_as",
            "squeeze",
            "unsqueeze",
        ),
        _reshaped,
    ),  # fmt: skip
    "expand": _expand,
    "expand_as": _expand,
    "__getitem__": _getitem,
    "unbind": _unbind,
    **dict.fromkeys(("cat", "concat", "concatenate", "stack"), _joined),
}
