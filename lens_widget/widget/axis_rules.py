"""What each op says of its tensors' axes (axis_book.py): which output axes are which input
axes, which merge or split others, and what some of them are.

Sources of names: token ids (an embedding's input) are (batch, token); an image input and a
conv's output are (batch, channel, height, width); attention (scaled_dot_product_attention,
a softmax over rank-4 scores) has heads and tokens; a linear's output axis is features (or
experts, in a router); topk's picked axis holds the top k. Everything else only moves axes:
elementwise ops, norms and slices keep them, transpose and permute reorder them, view,
reshape and flatten merge and split them where the sizes show how, and an op whose mapping
cannot be told gives fresh axes, which read "dim i" unless evidence names them.
"""

from __future__ import annotations

from lens_widget.widget.axis_book import MEDIUM, STRONG, WEAK, Axis, AxisBook
from lens_widget.widget.axis_moves import MOVE_RULES
from lens_widget.widget.axis_ops import Arg, Op, Rule, align
from lens_widget.widget.axis_sequence_rules import SEQUENCE_RULES

BATCH, CHANNEL, HEAD, TOKEN, FEATURE = "batch", "channel", "head", "token", "feature"
_SPATIAL = {1: ("length",), 2: ("height", "width"), 3: ("depth", "height", "width")}
# func name -> spatial rank of its (batch, channel, *spatial) output
_CONVS = {f"{kind}{d}d": d for d in (1, 2, 3) for kind in ("conv", "conv_transpose")}
_POOLS = {
    f"{kind}{d}d": d
    for d in (1, 2, 3)
    for kind in (
        "max_pool", "avg_pool", "adaptive_avg_pool", "adaptive_max_pool", "lp_pool",
        "fractional_max_pool",
    )
}  # fmt: skip
# The leaf names of a router's module: its linear scores experts, not features.
_ROUTERS = frozenset({"gate", "router"})
# Ops whose later outputs have the first one's axes (values and indices, a split's pieces).
_SAME_AXES_OUTPUTS = frozenset(
    {
        "split", "chunk", "tensor_split", "split_with_sizes", "hsplit", "vsplit", "dsplit",
        "topk", "sort", "max", "min", "kthvalue", "mode", "median", "nanmedian", "cummax",
        "cummin", "aminmax", "var_mean", "std_mean", "frexp", "broadcast_tensors", "meshgrid",
    }
)  # fmt: skip


def link_node(book: AxisBook, op: Op) -> None:
    node = op.node
    if node.kind == "input":
        _input(book, op)
    elif node.kind == "output" and op.args and op.outputs:
        align(book, op.outputs[0], op.args[0])
    elif node.kind == "op" and op.outputs:
        rule = _RULES.get(node.func)
        if rule is None and node.func in _CONVS:
            rule = _conv
        elif rule is None and node.func in _POOLS:
            rule = _pool
        (rule or _keeps_axes)(book, op)


def _input(book: AxisBook, op: Op) -> None:
    axes, shape = op.outputs[0]
    dtype = op.node.dtype or ""
    if len(shape) == 4 and "float" in dtype:
        for axis, name in zip(axes, (BATCH, CHANNEL, "height", "width"), strict=True):
            book.say(axis, name, MEDIUM)
    elif len(shape) == 2 and "int" in dtype:  # token ids
        book.say(axes[0], BATCH, MEDIUM)
        book.say(axes[1], TOKEN, MEDIUM)


def _keeps_axes(book: AxisBook, op: Op) -> None:
    """Elementwise ops, norms, activations, dropout, resampling, reductions: axes of one size
    are the input's; a reduction drops the dims it names."""
    src = op.first
    if src is None:
        return
    shapes = [a.shape for a in op.args]
    for index, (axes, shape) in enumerate(op.outputs):
        if index > 0 and op.node.func not in _SAME_AXES_OUTPUTS:
            break
        elementwise = _broadcast(shapes) == shape
        if elementwise:
            for arg in op.args:
                align(book, (axes, shape), arg)
        elif len(src.shape) == len(shape):
            align(book, (axes, shape), src, like=True)
        elif len(src.shape) > len(shape):
            _reduced(book, op, (axes, shape), src)


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape the shapes broadcast to (torch's rule), None when they do not."""
    rank = max(map(len, shapes), default=0)
    out = [1] * rank
    for shape in shapes:
        for i, size in enumerate(shape, rank - len(shape)):
            if size != 1:
                if out[i] not in (1, size):
                    return None
                out[i] = size
    return tuple(out)


def _reduced(book: AxisBook, op: Op, out: tuple[tuple[Axis, ...], tuple[int, ...]],
             src: Arg) -> None:  # fmt: skip
    dims = op.call_arg(1, "dim")
    rank = len(src.shape)
    dims = (dims,) if isinstance(dims, int) else dims
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims):
        return
    gone = {d % rank for d in dims if -rank <= d < rank}
    kept = [i for i in range(rank) if i not in gone]
    if len(kept) != len(out[0]):
        return
    for o, o_size, i in zip(out[0], out[1], kept, strict=True):
        if o_size == src.shape[i]:
            book.same(o, src.axes[i])


def _conv(book: AxisBook, op: Op) -> None:
    _channel_first(book, op, _CONVS[op.node.func], keeps_channels=False)


def _pool(book: AxisBook, op: Op) -> None:
    _channel_first(book, op, _POOLS[op.node.func], keeps_channels=True)


def _channel_first(book: AxisBook, op: Op, spatial: int, keeps_channels: bool) -> None:
    """(batch, channel, *spatial) out of (batch, channel, *spatial)."""
    axes, shape = op.outputs[0]
    x = op.first
    if x is None or len(shape) not in (spatial + 1, spatial + 2) or len(x.shape) != len(shape):
        return
    if len(shape) == spatial + 2:
        book.same(axes[0], x.axes[0])
        book.say(axes[0], BATCH, MEDIUM)
    channel = len(shape) - spatial - 1
    book.say(axes[channel], CHANNEL, MEDIUM)
    if keeps_channels:
        book.same(axes[channel], x.axes[channel])
    for i, name in enumerate(_SPATIAL[spatial]):
        d = channel + 1 + i
        book.say(axes[d], name, MEDIUM)
        if shape[d] == x.shape[d]:
            book.same(axes[d], x.axes[d])
    for index in range(1, len(op.outputs)):  # a max pool's indices: the same axes
        align(book, op.outputs[index], Arg("", axes, shape))


def _linear(book: AxisBook, op: Op) -> None:
    """linear(x, W): the leading dims are x's; the last is W's output features."""
    axes, shape = op.outputs[0]
    x, weight = op.arg("0"), op.arg("1")
    if x is None or len(x.shape) != len(shape) or not shape:
        return
    for o, i, o_size, i_size in zip(axes[:-1], x.axes[:-1], shape[:-1], x.shape[:-1], strict=True):
        if o_size == i_size:
            book.same(o, i)
    if weight is not None and len(weight.shape) == 2:
        book.same(axes[-1], weight.axes[0])
        book.same(x.axes[-1], weight.axes[1])
    book.say(axes[-1], FEATURE, WEAK)
    if op.node.module.rpartition(".")[2] in _ROUTERS:
        book.say(axes[-1], "expert", STRONG)


def _addmm(book: AxisBook, op: Op) -> None:
    """addmm(bias, x, W): GPT-2's Conv1D, a linear on (rows, features)."""
    axes, shape = op.outputs[0]
    x, weight = op.arg("1"), op.arg("2")
    if x is None or weight is None or len(shape) != 2:
        return
    book.same(axes[0], x.axes[0])
    book.same(x.axes[1], weight.axes[0])
    book.same(axes[1], weight.axes[1])
    book.say(axes[1], FEATURE, WEAK)


def _matmul(book: AxisBook, op: Op) -> None:
    """(..., n, k) @ (..., k, m) -> (..., n, m); baddbmm adds its input elementwise."""
    axes, shape = op.outputs[0]
    first = "1" if op.node.func == "baddbmm" else "0"
    a, b = op.arg(first), op.arg(str(int(first) + 1))
    if a is None or b is None or len(a.shape) < 2 or len(b.shape) < 2 or len(shape) < 2:
        return
    book.same(axes[-2], a.axes[-2])
    book.same(axes[-1], b.axes[-1])
    book.same(a.axes[-1], b.axes[-2])
    batch = (axes[:-2], shape[:-2])
    align(book, batch, Arg("", a.axes[:-2], a.shape[:-2]))
    align(book, batch, Arg("", b.axes[:-2], b.shape[:-2]))
    added = op.arg("0") if op.node.func == "baddbmm" else None
    if added is not None:
        align(book, (axes, shape), added)


def _einsum(book: AxisBook, op: Op) -> None:
    """The equation's letters: one letter, one axis ("bhqd,bhkd->bhqk")."""
    equation = op.call_arg(0, "equation")
    if not isinstance(equation, str) or "..." in equation or "->" not in equation:
        return
    inputs, output = equation.replace(" ", "").split("->")
    terms = inputs.split(",")
    operands = sorted(op.args, key=lambda a: a.position)
    if len(terms) != len(operands):
        return
    seen: dict[str, tuple[Axis, int]] = {}
    axes, shape = op.outputs[0]
    for term, arg in [*zip(terms, operands, strict=True), (output, Arg("", axes, shape))]:
        if len(term) != len(arg.axes):
            return
        for letter, axis, size in zip(term, arg.axes, arg.shape, strict=True):
            if letter in seen and seen[letter][1] == size:
                book.same(seen[letter][0], axis)
            seen.setdefault(letter, (axis, size))


def _topk(book: AxisBook, op: Op) -> None:
    x = op.first
    dim = op.call_arg(2, "dim", -1)
    if x is None or not isinstance(dim, int) or not x.shape:
        return
    dim %= len(x.shape)
    for axes, shape in op.outputs:
        if len(shape) != len(x.shape):
            return
        for d in range(len(shape)):
            if d == dim:
                book.say(axes[d], "top-k", STRONG)
            elif shape[d] == x.shape[d]:
                book.same(axes[d], x.axes[d])


def _softmax(book: AxisBook, op: Op) -> None:
    """Elementwise; over the last dim of rank-4 scores it is attention's (batch, head,
    query token, key token), over a rank-2 one it weighs classes."""
    _keeps_axes(book, op)
    axes, shape = op.outputs[0]
    dim = op.call_arg(1, "dim")
    if not isinstance(dim, int) or not shape or dim % len(shape) != len(shape) - 1:
        return
    if len(shape) == 4:
        book.say(axes[0], BATCH, MEDIUM)
        for axis, name in zip(axes[1:], (HEAD, TOKEN, TOKEN), strict=True):
            book.say(axis, name, STRONG)
    elif len(shape) == 2:
        book.say(axes[1], "class", MEDIUM)


def _attention(book: AxisBook, op: Op) -> None:
    """scaled_dot_product_attention(q, k, v): (batch, head, token, feature)."""
    axes, shape = op.outputs[0]
    q, k, v = op.arg("0"), op.arg("1"), op.arg("2")
    if q is None or k is None or v is None or len(shape) < 2:
        return
    if len(q.shape) != len(shape) or len(k.shape) != len(shape) or len(v.shape) != len(shape):
        return
    align(book, (axes[:-1], shape[:-1]), Arg("", q.axes[:-1], q.shape[:-1]))
    book.same(axes[-1], v.axes[-1])
    book.same(q.axes[-1], k.axes[-1])
    book.same(k.axes[-2], v.axes[-2])
    for a, b in ((q, k), (k, v)):  # batch and heads (grouped-query heads differ in size)
        align(book, (a.axes[:-2], a.shape[:-2]), Arg("", b.axes[:-2], b.shape[:-2]))
    book.say(axes[-2], TOKEN, STRONG)
    book.say(k.axes[-2], TOKEN, STRONG)
    book.say(axes[-1], FEATURE, MEDIUM)
    book.say(q.axes[-1], FEATURE, MEDIUM)  # the queries' and keys' own per-head features
    if len(shape) == 4:  # torch's documented layout: (N, heads, L, E)
        book.say(axes[0], BATCH, MEDIUM)
        book.say(axes[1], HEAD, STRONG)


def _embedding(book: AxisBook, op: Op) -> None:
    """embedding(ids, W): ids' dims, then W's features; the ids' last dim is tokens."""
    axes, shape = op.outputs[0]
    ids, weight = op.arg("0"), op.arg("1")
    if ids is None or len(ids.shape) != len(shape) - 1:
        return
    for o, i in zip(axes, ids.axes, strict=False):
        book.same(o, i)
    if weight is not None and len(weight.shape) == 2:
        book.same(axes[-1], weight.axes[1])
    book.say(axes[-1], FEATURE, WEAK)
    if ids.axes:
        book.say(ids.axes[-1], TOKEN, MEDIUM)
    if len(ids.axes) >= 2:
        book.say(ids.axes[0], BATCH, MEDIUM)


_RULES: dict[str, Rule] = {
    "linear": _linear,
    "addmm": _addmm,
    **dict.fromkeys(("matmul", "__matmul__", "bmm", "mm", "baddbmm"), _matmul),
    "einsum": _einsum,
    "topk": _topk,
    "softmax": _softmax,
    "log_softmax": _softmax,
    "scaled_dot_product_attention": _attention,
    "embedding": _embedding,
    **MOVE_RULES,
    **SEQUENCE_RULES,
}
