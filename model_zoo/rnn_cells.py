"""Language models that step a recurrent cell in a Python loop (nn.GRUCell, nn.LSTMCell), as
char-RNN tutorials do: each step's state feeds the next one."""

from __future__ import annotations

import torch
from torch import nn

from .case import VOCAB, ZooCase, build, token_ids

STEPS = 10


class CellLM(nn.Module):
    """Embedding -> one recurrent cell stepped over the tokens -> linear over the vocabulary."""

    def __init__(self, cell: str, dim: int = 16, hidden: int = 24) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.cell = nn.GRUCell(dim, hidden) if cell == "gru" else nn.LSTMCell(dim, hidden)
        self.head = nn.Linear(hidden, VOCAB)
        self.hidden = hidden

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = x.new_zeros(ids.shape[0], self.hidden)
        c = torch.zeros_like(h)
        for t in range(ids.shape[1]):
            if isinstance(self.cell, nn.LSTMCell):
                h, c = self.cell(x[:, t], (h, c))
            else:
                h = self.cell(x[:, t], h)
        return self.head(h)


def gru_cell_lm() -> ZooCase:
    return ZooCase(
        "gru_cell_lm",
        build(lambda: CellLM("gru")),
        (token_ids(seq=STEPS),),
        description=f"GRUCell stepped over {STEPS} tokens",
        expected_ops=("gru_cell",),
    )


def lstm_cell_lm() -> ZooCase:
    return ZooCase(
        "lstm_cell_lm",
        build(lambda: CellLM("lstm")),
        (token_ids(seq=STEPS),),
        description=f"LSTMCell stepped over {STEPS} tokens",
        expected_ops=("lstm_cell",),
    )
