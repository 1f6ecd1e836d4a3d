"""A tiny timm-style vision transformer in plain torch (timm is not installed here): a conv
patch embedding, a class token and position embedding, `blocks.N` with `attn` (one qkv
linear, scaled_dot_product_attention) and `mlp`, timm's module names."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .case import ZooCase, build, generator

WIDTH = 192
HEADS = 3
PATCH = 8
IMAGE = 32
TOKENS = (IMAGE // PATCH) ** 2 + 1  # the patches and the class token: 17


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(b, n, c))


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, 2 * WIDTH)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(WIDTH)
        self.attn = Attention()
        self.norm2 = nn.LayerNorm(WIDTH)
        self.mlp = Mlp()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, WIDTH, PATCH, stride=PATCH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, depth: int = 2, classes: int = 5) -> None:
        super().__init__()
        self.patch_embed = PatchEmbed()
        self.cls_token = nn.Parameter(torch.randn(1, 1, WIDTH) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, TOKENS, WIDTH) * 0.02)
        self.blocks = nn.Sequential(*[Block() for _ in range(depth)])
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def vit_like() -> ZooCase:
    """One 32x32 image in 8x8 patches: (1, 17, 192) tokens through 2 blocks of 3 heads."""
    return ZooCase(
        name="vit_like",
        model=build(VisionTransformer),
        args=(torch.randn(1, 3, IMAGE, IMAGE, generator=generator(6)),),
        description=f"timm-style ViT in plain torch, width {WIDTH}, {HEADS} heads, patch {PATCH}",
        expected_ops=("conv2d", "scaled_dot_product_attention", "layer_norm"),
        random_in_train=False,
    )
