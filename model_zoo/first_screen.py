"""Plain-torch models of what a first screen must show structure for (#36 item 5): a method
of a submodule called directly (not through `__call__`, as torchvision's detectors call
`self.transform.postprocess(...)`), and a ViT whose `Identity`/`Dropout` modules do nothing."""

from __future__ import annotations

import torch
from torch import nn

from .case import IMG, ZooCase, build, pixels


class BoxTransform(nn.Module):
    """Resizes images on its `__call__`; rescales boxes back in `postprocess`, a plain method
    the detector calls directly, one image at a time as torchvision's does."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return nn.functional.interpolate(images, scale_factor=0.5)

    def postprocess(
        self, boxes: torch.Tensor, size: tuple[int, int], original: tuple[int, int]
    ) -> torch.Tensor:
        out = []
        for b in boxes.unbind(0):  # boxes in 0..1 of the resized image
            b = b * size[0]
            ratios = [
                torch.tensor(o, dtype=torch.float32) / torch.tensor(s, dtype=torch.float32)
                for s, o in zip(size, original, strict=True)
            ]
            xmin, ymin, xmax, ymax = b.unbind(1)
            out.append(
                torch.stack(
                    (xmin * ratios[1], ymin * ratios[0], xmax * ratios[1], ymax * ratios[0]), dim=1
                )
            )
        return torch.stack(out)


class MethodCalls(nn.Module):
    """A toy detector: transform, a conv backbone, a box head, then the transform's
    `postprocess` called as a method; as in torchvision's GeneralizedRCNN, every op the
    detector's own forward makes is in that method."""

    def __init__(self) -> None:
        super().__init__()
        self.transform = BoxTransform()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2)
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(8 * 4, 4 * 4), nn.Unflatten(1, (4, 4)), nn.Sigmoid()
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        small = self.transform(images)
        boxes = self.head(self.backbone(small))
        h, w = small.shape[-2:]
        return self.transform.postprocess(boxes, (h, w), (images.shape[-2], images.shape[-1]))


def method_calls() -> ZooCase:
    return ZooCase("method_calls", build(MethodCalls), (pixels(),), min_ops=10)


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ls1 = nn.Identity()  # timm's layer scale when init_values is None
        self.drop_path1 = nn.Identity()
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.0), nn.Linear(2 * d, d), nn.Dropout(0.1)
        )
        self.ls2 = nn.Identity()
        self.drop_path2 = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.drop_path1(self.ls1(self.attn(y, y, y, need_weights=False)[0]))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class PatchEmbed(nn.Module):
    def __init__(self, d: int, patch: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class PlainViT(nn.Module):
    """timm's VisionTransformer in miniature: patch embed, cls token, position dropout,
    `forward_features` then `forward_head`, Identity pre-norm and head dropout."""

    def __init__(self, d: int = 32, depth: int = 2, heads: int = 2, patch: int = 8) -> None:
        super().__init__()
        self.patch_embed = PatchEmbed(d, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, (IMG // patch) ** 2 + 1, d) * 0.02)
        self.pos_drop = nn.Dropout(0.1)
        self.norm_pre = nn.Identity()
        self.blocks = nn.Sequential(*(Block(d, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(d)
        self.fc_norm = nn.Identity()
        self.head_drop = nn.Dropout(0.0)
        self.head = nn.Linear(d, 5)

    def _pos_embed(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        return self.pos_drop(x + self.pos_embed)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm_pre(self._pos_embed(self.patch_embed(x)))
        return self.norm(self.blocks(x))

    def forward_head(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.head_drop(self.fc_norm(x[:, 0])))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))


def plain_vit() -> ZooCase:
    return ZooCase("plain_vit", build(PlainViT), (pixels(),), min_ops=20)
