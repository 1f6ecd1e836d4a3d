"""A reentrant checkpoint's inner backward on a torch whose ``torch.autograd.backward`` takes
no torch function modes (torch 2.6; later versions dispatch it like ``torch.autograd.grad``).

``CheckpointFunction.backward`` reruns its region, then calls ``torch.autograd.backward`` on
the rerun's outputs. Where that call reaches the watcher mode, the backward capture hooks the
rerun's autograd nodes before it runs (``BackwardCapture.run_nested``). Where it does not,
the first call it does make through the modes is the tensor metadata that
``torch.autograd._make_grads`` reads (``out.dtype``): from that frame, the ``tensors`` it was
given are the inner backward's roots, hooked before the engine runs them.
Recognised by the code objects of those two functions, not by a version number.
"""

from __future__ import annotations

from types import CodeType, FrameType
from typing import Any

import torch

_BACKWARD_CODE: CodeType = torch.autograd.backward.__code__
# Whether torch.autograd.backward hands itself to torch function modes (then it is seen).
BACKWARD_SEEN_BY_MODES = "handle_torch_function" in _BACKWARD_CODE.co_names
_make_grads = getattr(torch.autograd, "_make_grads", None)
_MAKE_GRADS_CODE: CodeType | None = getattr(_make_grads, "__code__", None)
# Whether the watcher must look for unseen inner backward calls at all.
LOOK_FOR_UNSEEN = not BACKWARD_SEEN_BY_MODES and _MAKE_GRADS_CODE is not None


def unseen_backward_frame(frame: FrameType | None) -> FrameType | None:
    """The frame of the ``torch.autograd.backward`` call whose ``_make_grads`` is `frame`
    (the caller of a torch function the watcher sees), else None."""
    if frame is None or frame.f_code is not _MAKE_GRADS_CODE:
        return None
    outer = frame.f_back
    return outer if outer is not None and outer.f_code is _BACKWARD_CODE else None


def backward_roots(backward_frame: FrameType) -> tuple[Any, ...]:
    """The roots of the ``torch.autograd.backward`` call running in `backward_frame`: its
    ``tensors``, a tuple by the time it calls ``_make_grads``."""
    tensors = backward_frame.f_locals.get("tensors", ())
    return tensors if isinstance(tensors, tuple) else (tensors,)
