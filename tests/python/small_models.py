"""Small hand-written models several test files share."""

from __future__ import annotations

import torch
from torch import nn


class SmallNet(nn.Module):
    """BatchNorm (running stats), dropout (RNG), in-place ops and a factory call."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu_(self.bn(self.conv(x)))
        y = self.drop(y.mean((2, 3)))
        y += torch.randn(y.shape) * 0.01
        return self.head(y)


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Linear(4, 8)
        self.layer2 = nn.Linear(8, 6)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.layer2(torch.tanh(self.layer1(z)))


class Discriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).sigmoid()


def view_then_write(x: torch.Tensor) -> torch.Tensor:
    """A value read after it changed through another view: its replay needs a copy."""
    y = x * 2
    v = y[0]
    y.mul_(10)
    return v + 1  # v changed through y
