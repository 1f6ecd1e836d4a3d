"""On a GPU, saved activations stay on the device their op ran on and validate() replays
them there (skipped without CUDA)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lens_widget as lw

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu_(self.bn(self.conv(x)))
        y = self.drop(y.mean((2, 3)))
        return self.head(y + torch.randn_like(y) * 0.01)


@pytest.mark.parametrize("train", [False, True])
def test_activations_stay_on_the_device_their_op_ran_on(train):
    model = Small().cuda().train(train)
    x = torch.randn(2, 3, 8, 8, device="cuda")
    log = lw.trace(model, x)
    assert all(op.device.startswith("cuda") for op in log.ops)
    for node in log.nodes:
        for tensor in node.activations or ():
            assert tensor.is_cuda, f"{node.label} saved on {tensor.device}"
    report = log.validate()
    assert report.checked == len(log.ops)
