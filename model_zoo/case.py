"""What a zoo builder returns, the two sizes, and the seeded inputs and weights they share.

Every model is built from a config with random weights (never downloaded), the same on every
build: weights come from `torch.manual_seed(0)`, inputs from fixed generators.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn
from torch.utils._pytree import tree_map

# "tiny": a few ops wide, for tests and the bench's --quick smoke run.
# "bench": realistic sizes (GPT-2 small, bert-base, ResNet-50 ...) for the timing rows.
Size = Literal["tiny", "bench"]

# Tiny inputs: two rows (one padded) of 12 tokens from a 96-token vocabulary, 32x32 images.
VOCAB = 96
SEQ = 12
BATCH = 2
IMG = 32


@dataclass
class ZooCase:
    name: str
    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    # The configuration in words, for the bench report.
    description: str = ""
    # What a full trace of the tiny size must show (the tests check these).
    min_ops: int = 10
    # Op names (OpRecord.func) a trace must contain, factory ops among them (`torch.arange`,
    # `torch.zeros`: the tracer must see them though no tensor flows into them); train_ops
    # only in train mode.
    expected_ops: tuple[str, ...] = ()
    train_ops: tuple[str, ...] = ()
    # Whether train mode draws random numbers (dropout, drop-path), so seeds matter.
    random_in_train: bool = True
    # Inputs train mode needs besides `kwargs` (a detector's targets); eval mode takes none.
    train_kwargs: dict[str, Any] = field(default_factory=dict)

    def to(self, device: torch.device) -> ZooCase:
        """Move the model and every input tensor to `device` (in place; returns self)."""
        self.model.to(device)
        self.args, self.kwargs, self.train_kwargs = tree_map(
            lambda v: v.to(device) if isinstance(v, torch.Tensor) else v,
            (self.args, self.kwargs, self.train_kwargs),
        )
        return self


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def build(factory: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)  # weights are random but the same on every build
    return factory().eval()


def token_ids(
    vocab: int = VOCAB, seq: int = SEQ, seed: int = 1, batch: int = BATCH
) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=generator(seed))


def padding_mask(seq: int = SEQ) -> torch.Tensor:
    mask = torch.ones(BATCH, seq, dtype=torch.long)
    mask[1, -3:] = 0  # one padded row, so masking code paths run
    return mask


def pixels(size: int = IMG, seed: int = 2, batch: int = BATCH) -> torch.Tensor:
    return torch.randn(batch, 3, size, size, generator=generator(seed))


def bert_style(hidden: int, layers: int, heads: int, ffn: int) -> dict[str, int]:
    """Encoder widths under the names BERT, ViT, CLIP and Llama configs share."""
    return {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
    }


def seq2seq_style(width: int, layers: int, heads: int, ffn: int) -> dict[str, int]:
    """Encoder and decoder of the same shape, under the names BART and Whisper configs share."""
    return {
        "d_model": width,
        "encoder_layers": layers,
        "decoder_layers": layers,
        "encoder_attention_heads": heads,
        "decoder_attention_heads": heads,
        "encoder_ffn_dim": ffn,
        "decoder_ffn_dim": ffn,
    }


# The tiny transformers: 2 layers of width 32, 2 heads, feed-forward 64.
TINY_BERT_STYLE = bert_style(hidden=32, layers=2, heads=2, ffn=64)
TINY_SEQ2SEQ_STYLE = seq2seq_style(width=32, layers=2, heads=2, ffn=64)
