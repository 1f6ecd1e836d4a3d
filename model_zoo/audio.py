"""Audio models from `transformers`: wav2vec2, whose first screen showed 8 items at 100% with
its encoder closed and half the canvas empty (#36)."""

from __future__ import annotations

import torch
from transformers import Wav2Vec2Config, Wav2Vec2Model

from .case import BATCH, ZooCase, build, generator


def wav2vec2() -> ZooCase:
    """A tiny wav2vec2 (2 conv feature layers, 2 transformer layers of width 32) on 2 rows of
    400 samples of random audio."""
    cfg = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        vocab_size=32,
    )
    model = build(lambda: Wav2Vec2Model(cfg))
    audio = torch.randn(BATCH, 400, generator=generator(3))
    return ZooCase(
        "wav2vec2",
        model,
        (audio,),
        description=f"Wav2Vec2Model, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}",
        min_ops=40,
        expected_ops=("conv1d", "scaled_dot_product_attention"),
    )
