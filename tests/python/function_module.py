"""A plain function as a model: lets a test trace any forward written as a function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn


class FunctionModule(nn.Module):
    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)
