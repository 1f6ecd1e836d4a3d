"""What each dimension of an activation is (batch, channel, head, token, feature), where known.

The names label plot axes and sliders. They come from the ops that give dims a meaning
(a conv2d's output is batch x channel x height x width, a linear's last dim is features,
SDPA's output is batch x head x token x feature) and follow the data through the ops that
keep dims (elementwise ops, norms, slicing), move them (transpose, permute, matmul) or merge
and split them (view, reshape, flatten). One pass over the log in execution order; a dim
nothing names is "" here and "dim i" on the wire.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from lens_widget.log.records import OpRecord

Names = tuple[str, ...]

BATCH, CHANNEL, HEAD, TOKEN, FEATURE = "batch", "channel", "head", "token", "feature"
HIDDEN = "hidden"
_SPATIAL = {1: ("length",), 2: ("height", "width"), 3: ("depth", "height", "width")}
# func name -> spatial rank of its (batch, channel, *spatial) output
_CHANNEL_FIRST = {
    f"{kind}{d}d": d
    for d in (1, 2, 3)
    for kind in (
        "conv", "conv_transpose", "max_pool", "avg_pool", "adaptive_avg_pool",
        "adaptive_max_pool", "lp_pool", "fractional_max_pool",
    )
}  # fmt: skip
_LINEAR = frozenset({"linear", "addmm", "bilinear"})
_MATMUL = frozenset({"matmul", "__matmul__", "bmm", "mm", "baddbmm"})
_SWAP = frozenset({"transpose", "swapaxes", "swapdims"})
_RESHAPE = frozenset({"view", "reshape", "flatten", "unflatten", "view_as", "reshape_as"})
# Ops whose output dims do not line up with an input's dims even when the rank is the same.
_NOT_DIM_PRESERVING = _MATMUL | _SWAP | _RESHAPE | {"permute", "t", "movedim", "einsum"}
_ATTENTION_HINTS = ("attn", "attention")
_RNN = frozenset({"lstm", "gru", "rnn_tanh", "rnn_relu"})
# One step of a recurrent cell (nn.LSTMCell, GRUCell, RNNCell): (batch, hidden) states.
_RNN_CELLS = frozenset({"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"})
# Ops whose later outputs have the first one's dims (values and indices, the pieces of a
# split); any other op's later outputs are something else (an LSTM's final states).
_SAME_DIM_OUTPUTS = frozenset(
    {
        "split", "chunk", "tensor_split", "split_with_sizes", "hsplit", "vsplit", "dsplit",
        "topk", "sort", "max", "min", "kthvalue", "mode", "median", "nanmedian", "cummax",
        "cummin", "aminmax", "var_mean", "std_mean", "frexp", "broadcast_tensors", "meshgrid",
    }
)  # fmt: skip


def wire_names(names: Names) -> list[str]:
    """Names as sent to the frontend: unknown dims read "dim i"."""
    return [name or f"dim {i}" for i, name in enumerate(names)]


class DimNames:
    """Dim names of every output of every node of a log, computed once on first use."""

    def __init__(self, nodes: Iterable[OpRecord]) -> None:
        self._nodes = nodes
        self._names: dict[tuple[str, int], Names] | None = None

    def of(self, label: str, output: int = 0) -> Names:
        if self._names is None:
            self._names = {}
            for node in self._nodes:
                for index, names in enumerate(_node_names(node, self._names)):
                    self._names[node.label, index] = names
        return self._names.get((label, output), ())


def _shapes(node: OpRecord) -> tuple[tuple[int, ...], ...]:
    if node.shapes:
        return node.shapes
    return (node.shape,) if node.shape is not None else ()


def _node_names(node: OpRecord, known: dict[tuple[str, int], Names]) -> list[Names]:
    inputs = [
        (known.get((arg.parent, arg.output_index), ()), arg.position) for arg in node.parent_args
    ]
    out = []
    for index, shape in enumerate(_shapes(node)):
        names = _rule(node, index, shape, inputs)
        if len(names) != len(shape):
            names = ("",) * len(shape)
        out.append(_complete(names))
    return out


def _first(inputs: Sequence[tuple[Names, str]], position: str = "0") -> Names:
    for names, where in inputs:
        if where == position:
            return names
    return ()


Inputs = list[tuple[Names, str]]  # (names of an input, its argument position)


def _rule(node: OpRecord, output: int, shape: tuple[int, ...], inputs: Inputs) -> Names:
    rank, func = len(shape), node.func
    if node.kind == "input":
        if rank == 4 and node.dtype is not None and "float" in node.dtype:
            return (BATCH, CHANNEL, *_SPATIAL[2])
        if rank == 2 and node.dtype is not None and "int" in node.dtype:
            return (BATCH, TOKEN)  # token ids
        return ()
    if func in _CHANNEL_FIRST:
        spatial = _SPATIAL[_CHANNEL_FIRST[func]]
        names = (BATCH, CHANNEL, *spatial)
        return names[len(names) - rank :]
    if func == "scaled_dot_product_attention":
        return (BATCH, HEAD, TOKEN, FEATURE)[-rank:] if rank <= 4 else ()
    if func == "multi_head_attention_forward":
        if output == 0:  # (queries, batch, embed): torch puts the batch second here
            return (TOKEN, BATCH, FEATURE) if rank == 3 else (TOKEN, FEATURE)[-rank:]
        return (BATCH, HEAD, TOKEN, TOKEN)[-rank:] if rank <= 4 else ()
    if func == "embedding":
        ids = _first(inputs)
        return (*ids, FEATURE) if len(ids) == rank - 1 else ()
    if func in _LINEAR:
        data = _first(inputs, "1" if func == "addmm" else "0")
        return (*data[:-1], FEATURE) if len(data) == rank else ("",) * (rank - 1) + (FEATURE,)
    if func in _MATMUL:
        a, b = _first(inputs, "0"), _first(inputs, "1")
        if func == "baddbmm":
            a, b = _first(inputs, "1"), _first(inputs, "2")
        if len(a) == rank and len(b) >= 2:
            return (*a[:-1], b[-1])
        return ()
    if func in _SWAP or func in ("t", "permute", "movedim"):
        return _moved(node, _first(inputs), rank)
    if func in _RESHAPE:
        parent = _parent_shape(node)
        names = _first(inputs)
        return _reshaped(names, parent, shape, _in_attention(node)) if parent else ()
    if func in _RNN:
        return _rnn_names(node, output, rank)
    if func in _RNN_CELLS:
        return (BATCH, HIDDEN)[-rank:] if rank <= 2 else ()
    if func == "topk":
        return _top_k(node, _first(inputs), rank)
    if func in _NOT_DIM_PRESERVING or (output > 0 and func not in _SAME_DIM_OUTPUTS):
        return ()
    # Elementwise ops, norms, dropout, slicing, cat, split, outputs: dims keep their meaning.
    for names, _ in inputs:
        if len(names) == rank and any(names):
            return names
    return ()


def _rnn_names(node: OpRecord, output: int, rank: int) -> Names:
    """torch.lstm / gru / rnn_*: the output sequence is (batch, token, feature) or (token,
    batch, feature) as the call's batch_first says; the final states (h_n, c_n) are
    (layer, batch, feature) whatever batch_first is. Unbatched calls drop the batch."""
    if output > 0:
        return {3: ("layer", BATCH, FEATURE), 2: ("layer", FEATURE)}.get(rank, ())
    call = node.replay[0] if node.replay is not None else None
    args = call.args if call is not None else ()
    # (input, hx, params, has_biases, layers, dropout, train, bidirectional, batch_first);
    # a PackedSequence's call takes batch_sizes second and has no batch_first.
    if len(args) != 9 or not isinstance(args[3], bool):
        return ("", FEATURE) if rank == 2 else ()
    if rank == 2:
        return (TOKEN, FEATURE)
    return (
        ((BATCH, TOKEN, FEATURE) if args[8] is True else (TOKEN, BATCH, FEATURE))
        if rank == 3
        else ()
    )


def _top_k(node: OpRecord, names: Names, rank: int) -> Names:
    """topk's values and indices keep the input's dims but the one it picked along, which
    now holds the k best ("top-k"), not all features."""
    call = node.replay[0] if node.replay is not None else None
    if len(names) != rank or rank == 0 or call is None:
        return ()
    dim = call.kwargs.get("dim", call.args[2] if len(call.args) > 2 else -1)
    if not isinstance(dim, int) or not -rank <= dim < rank:
        return ()
    return tuple("top-k" if i == dim % rank else name for i, name in enumerate(names))


def _in_attention(node: OpRecord) -> bool:
    return any(hint in node.module.lower() for hint in _ATTENTION_HINTS)


def _parent_shape(node: OpRecord) -> tuple[int, ...] | None:
    if node.replay is None:
        return None
    for position, parent, index in node.replay[1]:
        if position == "0":
            shapes = _shapes(parent)
            return shapes[index] if index < len(shapes) else None
    return None


def _moved(node: OpRecord, names: Names, rank: int) -> Names:
    """transpose / permute / t / movedim applied to the names, from the call's own ints."""
    if len(names) != rank or node.replay is None or node.replay[0] is None:
        return ()
    args = [a for a in node.replay[0].args[1:] if isinstance(a, int)]
    args += [v for v in node.replay[0].kwargs.values() if isinstance(v, int)]
    order = list(range(rank))
    if node.func == "t" and rank == 2:
        order = [1, 0]
    elif node.func in _SWAP and len(args) == 2:
        a, b = (d % rank for d in args)
        order[a], order[b] = order[b], order[a]
    elif node.func == "permute":
        dims = node.replay[0].args[1:]
        dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        if sorted(d % rank for d in dims) != order:
            return ()
        order = [d % rank for d in dims]
    else:
        return ()
    return tuple(names[i] for i in order)


def _reshaped(names: Names, before: tuple[int, ...], after: tuple[int, ...], attn: bool) -> Names:
    """Names through a view: dims kept keep theirs, merged dims join ("batch×token"),
    a merged dim split back gets its parts, a feature dim split in attention is heads."""
    if len(names) != len(before) or math.prod(before) != math.prod(after):
        return ()
    out: list[str] = []
    i = j = 0
    while i < len(before) or j < len(after):
        # the smallest runs of dims on each side with equal products
        gi, gj = i, j
        pa = before[gi] if gi < len(before) else 1
        pb = after[gj] if gj < len(after) else 1
        gi, gj = gi + 1, gj + 1
        while pa != pb:
            if pa < pb and gi < len(before):
                pa *= before[gi]
                gi += 1
            elif gj < len(after):
                pb *= after[gj]
                gj += 1
            else:
                return ()
        # size-1 dims carry no meaning of their own: regroup the others, name new 1s ""
        src = [n for n, s in zip(names[i:gi], before[i:gi], strict=True) if s != 1]
        dst = after[j:gj]
        sized = iter(_regroup(src, sum(s != 1 for s in dst), attn))
        out += [next(sized) if s != 1 else "" for s in dst]
        i, j = gi, gj
    return tuple(out[: len(after)])


def _regroup(src: list[str], n_out: int, attn: bool) -> list[str]:
    if len(src) == n_out:
        return src
    if n_out == 1 and src:
        parts = [n for n in src if n]
        if parts == [HEAD, FEATURE]:
            return [FEATURE]  # heads joined back into the model's features
        return ["×".join(parts)] if len(parts) == len(src) else [""]
    if len(src) == 1 and src[0].count("×") == n_out - 1:
        return src[0].split("×")
    if src == [FEATURE] and n_out == 2 and attn:
        return [HEAD, FEATURE]
    return [""] * n_out


def _complete(names: Names) -> Names:
    """(?, ?, feature) is (batch, token, feature): the layout of every sequence model."""
    if len(names) == 3 and names[2] == FEATURE and not names[0] and not names[1]:
        return (BATCH, TOKEN, FEATURE)
    return names
