"""Logs with gradients for the widget's tests: a forward and one backward pass per loss,
traced by `lw.trace(..., backward=...)`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.model_log import ModelLog

Loss = Callable[[torch.Tensor], torch.Tensor]


class CutOff(nn.Module):
    """`aux` is cut off by detach: its parameters get no gradient."""

    def __init__(self, d_in: int = 6, hidden: int = 12, d_out: int = 4) -> None:
        super().__init__()
        self.fc, self.aux = nn.Linear(d_in, hidden), nn.Linear(d_in, hidden)
        self.head = nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.fc(x)) + self.aux(x).detach())


def squared_mean(out: torch.Tensor) -> torch.Tensor:
    return out.float().pow(2).mean()


def traced_with_grads(
    model: nn.Module,
    inputs: Any = (),
    kwargs: dict[str, Any] | None = None,
    *,
    losses: Sequence[Loss] = (squared_mean,),
    second_backward_error: bool = False,
) -> ModelLog:
    """The traced step: forward, then one backward pass per loss (each applied to the model's
    tensor output, or to `logits` of a ModelOutput). `second_backward_error` runs the last
    loss's backward once more, which raises "backward through the graph a second time": the
    partial log is returned."""

    def step(output: Any) -> None:
        out = output.logits if hasattr(output, "logits") else output
        loss = out
        for i, loss_fn in enumerate(losses):
            loss = loss_fn(out)
            loss.backward(retain_graph=i < len(losses) - 1)
        if second_backward_error:
            loss.backward()

    try:
        return lw.trace(model, inputs, kwargs, backward=step)
    except RuntimeError as err:
        log = lw.partial_log(err)
        if not second_backward_error or log is None:
            raise
        return log
