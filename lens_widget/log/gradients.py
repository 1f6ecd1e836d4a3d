"""What a traced backward left in the log: named autograd leaves and the backward passes.

The capture side (a section traced with ``grads=True``, or ``trace(..., backward=fn)``)
fills these; a log of a forward alone has no leaves and no backward passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

LeafKind = Literal["param", "input", "other"]


def summed(grads: tuple[torch.Tensor | None, ...] | None) -> torch.Tensor | None:
    """The gradient over every backward pass, as ``.grad`` accumulates it; None if none came."""
    if not grads:
        return None
    present = [g for g in grads if g is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    total = present[0].clone()
    for g in present[1:]:
        total += g
    return total


@dataclass(eq=False)
class LeafRecord:
    """An autograd leaf (a tensor with ``requires_grad`` and no ``grad_fn``) the section used.

    ``name``: a parameter's ``named_parameters`` address, an input's name, else the
    ``file:line`` that created the tensor or the label of the op that first used it.
    ``received`` is False for a leaf that requires grad but that no backward pass reached
    (cut off by ``detach``, ``no_grad`` or an integer path): the bug users hunt for.
    """

    name: str
    kind: LeafKind
    shape: tuple[int, ...]
    dtype: str
    # The log node of the leaf (a param/input source), None when no recorded op read it.
    label: str | None = None
    # Where it came from: "file.py:12" for a leaf made in user code; "" otherwise.
    source: str = ""
    # One entry per backward pass (None where that pass did not reach the leaf).
    grads: tuple[torch.Tensor | None, ...] = ()

    @property
    def grad(self) -> torch.Tensor | None:
        """The gradient that reached the leaf during the section (summed over passes)."""
        return summed(self.grads)

    @property
    def received(self) -> bool:
        return any(g is not None for g in self.grads)

    def __repr__(self) -> str:
        got = "got grad" if self.received else "NO grad"
        return f"<leaf {self.kind} {self.name}: {'x'.join(map(str, self.shape))} {got}>"


@dataclass(eq=False)
class BackwardPass:
    """One ``.backward()`` / ``torch.autograd.backward`` / ``torch.autograd.grad`` call."""

    index: int  # 1-based, in the order they ran
    call: str  # "backward" or "autograd.grad"
    retain_graph: bool
    source: str = ""  # "file.py:12" of the call
    # Node ids of ``ModelLog.backward_graph`` in the order they ran during this pass.
    nodes: list[str] = field(default_factory=list, repr=False)
    # Set when the pass raised: the message, the forward op whose saved tensors were
    # involved (label and source line) and, for a second backward through freed saved
    # tensors, the index of the earlier pass that freed them.
    error: str | None = None
    error_op: str | None = None
    error_source: str | None = None
    freed_by: int | None = None
    # For "modified by an inplace operation": the recorded op that wrote in place into a
    # tensor the failing op had saved, when the trace saw it.
    inplace_op: str | None = None
    # Ran inside a torch.func transform: ``autograd.grad(..., is_grads_batched=True)`` (the
    # engine under vmap, one backward per grad_output) or the backward of ``torch.func.grad``
    # / ``vjp``. Its gradients exist only wrapped inside the transform: its nodes and
    # per-sample gradient shapes are recorded, no gradient is kept.
    in_transform: bool = False


@dataclass(eq=False)
class Recomputation:
    """A forward op run again inside a backward pass (``torch.utils.checkpoint``).

    Not a new layer or pass: ``op`` is the label of the forward op it repeats (whose
    ``grads`` it helps fill); the log's ops and module pass counts are as forward left them.
    """

    op: str
    func: str
    backward_pass: int  # BackwardPass.index of the pass that recomputed it
