"""Tensors inside a ``torch.func`` transform (vmap's batched tensors, grad's tracking ones).

A transform wraps the tensors it is given where no TorchFunctionMode sees it, so the ops
inside it read tensors the tracer does not know, and make wrapped tensors that are only
meaningful inside the transform (any op on one afterwards raises "your tensor may have
escaped"). The tracer links a wrapped input to the op that made the tensor inside it, keeps
no wrapped value (the op is recorded with its per-sample shape, its value not saved), and
knows the plain tensor under each wrapped output: vmap returns that very tensor, so the ops
after the transform link to the op that made it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

Tensor = torch.Tensor

_functorch: Any = getattr(torch._C, "_functorch")  # noqa: B009  # not in torch's type stubs
is_wrapped = _functorch.is_functorch_wrapped_tensor
_get_unwrapped = _functorch.get_unwrapped
_current_level = _functorch.maybe_current_level


def inner_tensors(tensor: Tensor) -> Iterator[Tensor]:
    """The tensors under a wrapped one, outermost first, down to the plain one."""
    while is_wrapped(tensor):
        tensor = _get_unwrapped(tensor)
        yield tensor


def plain_tensor(tensor: Tensor) -> Tensor:
    """The plain tensor under every wrapper (`tensor` itself when not wrapped)."""
    while is_wrapped(tensor):
        tensor = _get_unwrapped(tensor)
    return tensor


def transform_running() -> bool:
    """Some torch.func transform is running on this thread."""
    return _current_level() is not None


class QuietInTransform:
    """The recorder's bookkeeping while a transform runs: torch functions off as always, and
    the transform's own dispatch off too, so the detached references and copies it makes are
    plain tensors, not wrapped ones (grad's transform wraps even a parameter's detach)."""

    def __init__(self, quiet: Any) -> None:
        self._quiet = quiet
        self._guards: list[Any] = []

    def __enter__(self) -> None:
        self._quiet.__enter__()
        guard = torch._C._DisableFuncTorch()
        guard.__enter__()
        self._guards.append(guard)

    def __exit__(self, *exc: object) -> None:
        self._guards.pop().__exit__(*exc)
        self._quiet.__exit__(*exc)
