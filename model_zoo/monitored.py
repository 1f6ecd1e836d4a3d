"""A small model trained under ``lw.Monitor``, with a NaN made at a known step: the monitor
view's tests (Python, plain page, JupyterLab) train it."""

from __future__ import annotations

import time

import torch
from torch import nn

import lens_widget as lw


class PoisonNet(nn.Module):
    """Linear, ReLU, (+ 0 * log(h + 1)), Linear; at forward call `poison_at` the log is of
    a negative number: NaN from finite values, in op "log" of the same graph as every step."""

    def __init__(self, poison_at: int | None = None) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)
        self.poison_at = poison_at
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        shift = -1e9 if self.calls == self.poison_at else 1.0
        h = h + 0.0 * torch.log(h + shift)
        self.calls += 1
        return self.fc2(h)


def train(
    model: nn.Module, monitor: lw.Monitor, steps: int, sleep: float = 0.0, seed: int = 1
) -> None:
    """`steps` SGD steps on random data, each in ``monitor.step()``; `sleep` s after each."""
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x, y = torch.randn(4, 8), torch.randn(4, 4)
        with monitor.step():
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
        if sleep:
            time.sleep(sleep)
