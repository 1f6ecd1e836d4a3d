"""Names the recurrent and torch-attention ops give (axis_rules.py's other sources): an LSTM's
output sequence is (batch, token, feature) or (token, batch, feature) as its batch_first
says, its final states (layer, batch, feature); a recurrent cell's states (batch, hidden);
nn.MultiheadAttention's output (token, batch, feature), its weights (batch, head, token,
token)."""

from __future__ import annotations

from lens_widget.widget.axis_book import MEDIUM, Axis, AxisBook
from lens_widget.widget.axis_ops import Op, Rule

BATCH, TOKEN, FEATURE = "batch", "token", "feature"
_RNN = ("lstm", "gru", "rnn_tanh", "rnn_relu")
_CELLS = ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")


def _say_all(book: AxisBook, axes: tuple[Axis, ...], names: tuple[str, ...]) -> None:
    if len(axes) == len(names):
        for axis, name in zip(axes, names, strict=True):
            book.say(axis, name, MEDIUM)


def _rnn(book: AxisBook, op: Op) -> None:
    """torch.lstm / gru / rnn_*: (input, hx, params, has_biases, layers, dropout, train,
    bidirectional, batch_first); a PackedSequence's call has no batch_first."""
    call = op.node.replay[0] if op.node.replay is not None else None
    args = call.args if call is not None else ()
    batch_first = args[8] if len(args) == 9 and isinstance(args[3], bool) else None
    for index, (axes, shape) in enumerate(op.outputs):
        if index > 0:
            _say_all(book, axes, {3: ("layer", BATCH, FEATURE), 2: ("layer", FEATURE)}.get(
                len(shape), ()))  # fmt: skip
        elif len(shape) == 3 and batch_first is not None:
            names = (BATCH, TOKEN, FEATURE) if batch_first is True else (TOKEN, BATCH, FEATURE)
            _say_all(book, axes, names)  # its own layout: not joined to the input's
        elif len(shape) == 2:
            _say_all(book, axes, (TOKEN, FEATURE) if batch_first is not None else ("", FEATURE))


def _cell(book: AxisBook, op: Op) -> None:
    for axes, shape in op.outputs:
        _say_all(book, axes, ("batch", "hidden")[-len(shape) :] if len(shape) <= 2 else ())
    x = op.first
    if x is not None and len(x.shape) == 2 and len(op.outputs[0][1]) == 2:
        book.same(op.outputs[0][0][0], x.axes[0])


def _multi_head(book: AxisBook, op: Op) -> None:
    for index, (axes, shape) in enumerate(op.outputs):
        if index == 0:  # (queries, batch, embed): torch puts the batch second here
            _say_all(book, axes, (TOKEN, BATCH, FEATURE) if len(shape) == 3 else (TOKEN, FEATURE))
            query = op.first
            if query is not None and query.shape == shape:
                for o, q in zip(axes, query.axes, strict=True):
                    book.same(o, q)
        elif 2 <= len(shape) <= 4:
            _say_all(book, axes, (BATCH, "head", TOKEN, TOKEN)[-len(shape) :])


SEQUENCE_RULES: dict[str, Rule] = {
    **dict.fromkeys(_RNN, _rnn),
    **dict.fromkeys(_CELLS, _cell),
    "multi_head_attention_forward": _multi_head,
}
