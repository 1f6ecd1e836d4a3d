"""A tiny diffusers UNet2DConditionModel: down, mid and up blocks with cross-attention."""

from __future__ import annotations

import torch
from diffusers import UNet2DConditionModel

from .case import ZooCase, build, generator


def unet2d_condition() -> ZooCase:
    """Channels (8, 16), one cross-attention block each way, a 16x16 latent, 5 text tokens."""
    config = {
        "sample_size": 16,
        "in_channels": 4,
        "out_channels": 4,
        "layers_per_block": 1,
        "block_out_channels": (8, 16),
        "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
        "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"),
        "norm_num_groups": 4,
        "cross_attention_dim": 16,
        "attention_head_dim": 2,
    }
    sample = torch.randn(1, 4, 16, 16, generator=generator(4))
    text = torch.randn(1, 5, 16, generator=generator(5))
    return ZooCase(
        name="unet2d_condition",
        model=build(lambda: UNet2DConditionModel(**config)),
        args=(sample, torch.tensor(10), text),
        description="UNet2DConditionModel, channels (8, 16), cross-attention d=16, 16x16 latent",
        min_ops=100,
        expected_ops=("conv2d", "group_norm", "scaled_dot_product_attention"),
        random_in_train=False,
    )
