"""Models whose forward makes NaN/Inf on purpose: one where it reaches the output, and one
where it is masked away later (as T5's relative-position buckets do with log(0))."""

from __future__ import annotations

import torch
from torch import nn

from .case import ZooCase, build, generator


class NonfiniteHeads(nn.Module):
    """Two heads on one linear layer: `log` of a value that can be negative (NaN reaches the
    output), and `log` of a distance that is 0 on the diagonal (-inf), clamped to a finite
    bucket number before it is used, as T5 does."""

    def __init__(self, dim: int = 6) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.proj(x)
        leaking = torch.log(y)  # NaN where y < 0: it reaches the first output
        distance = torch.arange(x.shape[-1]).float()
        buckets = torch.log(distance).clamp(min=0.0)  # -inf at 0, clamped away
        return leaking, y + buckets


def nonfinite_heads() -> ZooCase:
    return ZooCase(
        "nonfinite_heads",
        build(NonfiniteHeads),
        (torch.randn(2, 6, generator=generator(3)),),
        description="log of a signed value (NaN reaches the output) and of 0 (clamped away)",
        expected_ops=("log", "clamp"),
    )
