"""Models written with plain `torch.nn`: recurrent, attention and conv classics, a block looped
in forward (the rolled view folds it), and a synthetic chain of any size for graph benches."""

from __future__ import annotations

import torch
from torch import nn

from .case import IMG, VOCAB, Size, ZooCase, build, generator, padding_mask, pixels, token_ids


class LSTMTagger(nn.Module):
    """Embedding -> 2-layer LSTM -> linear per token, the classic sequence tagger."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True, dropout=0.2)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(32, 7)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, state = self.lstm(self.embed(ids))
        return self.head(self.drop(out)), state


class LSTMNextToken(nn.Module):
    """Embedding -> 2-layer LSTM -> linear over the vocabulary from the last step."""

    def __init__(self, vocab: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1])


def lstm(size: Size = "tiny") -> ZooCase:
    """tiny: the tagger, returning its state too; bench: a next-token model, 10k vocabulary."""
    if size == "tiny":
        return ZooCase(
            "lstm",
            build(LSTMTagger),
            (token_ids(),),
            description="embed 32 -> 2-layer LSTM hidden 32 -> linear 7 per token",
            min_ops=5,
            expected_ops=("lstm", "zeros"),
        )
    vocab, dim, hidden, batch, seq = 10000, 256, 512, 8, 100
    size_text = (
        f"embed {dim} -> 2-layer LSTM hidden {hidden} -> linear {vocab}, batch {batch}, seq {seq}"
    )
    model = build(lambda: LSTMNextToken(vocab, dim, hidden))
    return ZooCase("lstm", model, (token_ids(vocab, seq, batch=batch),), description=size_text)


class GRUCellLM(nn.Module):
    """Embedding -> one GRUCell stepped over the tokens in a Python loop -> linear over the
    vocabulary per step: each step reads the hidden state the step before made (recurrence)."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Embedding(VOCAB, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = x.new_zeros(ids.shape[0], self.hidden)
        logits = []
        for t in range(ids.shape[1]):
            h = self.cell(x[:, t], h)
            logits.append(self.head(h))
        return torch.stack(logits, dim=1)


GRU_STEPS = 10


def gru_cell_lm() -> ZooCase:
    """A GRU-cell language model over 10 tokens: a loop feeding itself."""
    return ZooCase(
        "gru_cell_lm",
        build(GRUCellLM),
        (token_ids(seq=GRU_STEPS),),
        description=f"embed 32 -> GRUCell(32) looped over {GRU_STEPS} tokens -> linear {VOCAB}",
        min_ops=3 * GRU_STEPS,
        expected_ops=("gru_cell", "embedding", "stack"),
        random_in_train=False,
    )


class TinyEncoder(nn.Module):
    """nn.TransformerEncoder with a learned position table and a padding mask."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.pos = nn.Parameter(torch.randn(64, 32) * 0.02)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 3)

    def forward(self, ids: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.embed(ids) + self.pos[positions]
        h = self.encoder(h, src_key_padding_mask=pad_mask)
        return self.head(h.mean(dim=1))


def transformer_encoder() -> ZooCase:
    return ZooCase(
        "transformer_encoder",
        build(TinyEncoder),
        (token_ids(), padding_mask() == 0),
        min_ops=25,
        expected_ops=("arange", "multi_head_attention_forward"),
    )


class SmallCNN(nn.Module):
    """Conv-BN-ReLU stack with dropout: train mode updates BatchNorm running stats."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x).flatten(2).mean(-1)
        return self.head(self.drop(h))


def small_cnn() -> ZooCase:
    return ZooCase(
        "small_cnn",
        build(SmallCNN),
        (pixels(),),
        description=f"2 conv-BN-ReLU layers, {IMG}x{IMG}",
        min_ops=9,
        expected_ops=("conv2d", "batch_norm", "dropout"),
    )


class _Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(self.norm(x)))


class Looped(nn.Module):
    """One block applied N times: the rolled view should fold it into one node per op."""

    def __init__(self, dim: int, times: int) -> None:
        super().__init__()
        self.block = _Block(dim)
        self.times = times

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            x = self.block(x)
        return x


def looped(size: Size = "tiny") -> ZooCase:
    dim, batch, times = (512, 64, 20) if size == "bench" else (16, 2, 3)
    x = torch.randn(batch, dim, generator=generator(2))
    size_text = f"one LayerNorm+Linear({dim})+ReLU+residual block applied {times}x, batch {batch}"
    return ZooCase(
        "looped",
        build(lambda: Looped(dim, times)),
        (x,),
        description=size_text,
        min_ops=4 * times,
        expected_ops=("layer_norm", "linear", "relu"),
        random_in_train=False,
    )


class _Chain(nn.Module):
    """`blocks` tiny two-op blocks, in modules of 10: a graph of ~2*blocks ops, cheap to run."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.groups = nn.ModuleList(
            nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(10)))
            for _ in range(max(1, blocks // 10))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for group in self.groups:
            x = group(x)
        return x


def chain(n_ops: int) -> ZooCase:
    """A synthetic model with about `n_ops` traced ops (linear + relu per block)."""
    return ZooCase(
        f"chain{n_ops}",
        build(lambda: _Chain(n_ops // 2)),
        (torch.randn(4, 8, generator=generator(2)),),
        description=f"{n_ops // 2} Linear(8,8)+ReLU blocks",
    )
