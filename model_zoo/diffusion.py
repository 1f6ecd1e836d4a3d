"""Image-generation models from `diffusers`, tiny random-weight configs (never downloaded).

Both return diffusers' `BaseOutput` dataclasses (`UNet2DConditionOutput`, `DecoderOutput`),
which diffusers registers with torch's pytree without key functions: the log names their
field `output.sample` all the same. Neither draws random numbers (no dropout; the VAE decodes
the posterior's mode).
"""

from __future__ import annotations

import torch
from diffusers import AutoencoderKL, UNet2DConditionModel

from .case import BATCH, ZooCase, build, generator, pixels

# Latents of 4 channels at 8x8, conditioned on 5 "text" vectors of width 16.
LATENT_CHANNELS = 4
LATENT = 8
CONTEXT_WIDTH = 16


def unet2d_condition() -> ZooCase:
    model = build(
        lambda: UNet2DConditionModel(
            sample_size=LATENT,
            in_channels=LATENT_CHANNELS,
            out_channels=LATENT_CHANNELS,
            layers_per_block=1,
            block_out_channels=(8, 16),
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
            cross_attention_dim=CONTEXT_WIDTH,
            attention_head_dim=2,
            norm_num_groups=4,
        )
    )
    latents = torch.randn(BATCH, LATENT_CHANNELS, LATENT, LATENT, generator=generator(3))
    context = torch.randn(BATCH, 5, CONTEXT_WIDTH, generator=generator(4))
    return ZooCase(
        name="unet2d_condition",
        model=model,
        args=(latents, torch.tensor([10, 500])),
        kwargs={"encoder_hidden_states": context},
        description="UNet2DConditionModel, 2 blocks (8, 16 channels), cross-attention d=16, 8x8",
        min_ops=80,
        expected_ops=("conv2d", "group_norm", "silu", "scaled_dot_product_attention"),
        random_in_train=False,
    )


def autoencoder_kl() -> ZooCase:
    model = build(
        lambda: AutoencoderKL(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
            up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
            block_out_channels=(8, 16),
            layers_per_block=1,
            latent_channels=LATENT_CHANNELS,
            norm_num_groups=4,
            sample_size=16,
        )
    )
    return ZooCase(
        name="autoencoder_kl",
        model=model,
        args=(pixels(16),),
        description="AutoencoderKL, 2 blocks (8, 16 channels), 4 latent channels, 16x16",
        min_ops=40,
        expected_ops=("conv2d", "group_norm", "silu"),
        random_in_train=False,
    )
