"""GPU-ready capture, checked without a GPU: nothing the tracer does per op reads a tensor's
values on the host. Every such read (``.item()``, ``bool(t)``, ``int(t)``, ``.tolist()``
of one element) reaches the dispatcher as ``aten._local_scalar_dense`` or
``aten.is_nonzero``, on any device: on CUDA each would wait for the GPU. A dispatch mode
around the trace (it sees the tracer's own bookkeeping too) counts them; the traced model
itself reads none, so any count is the tracer's."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import lens_widget as lw
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")

_HOST_READS = {"_local_scalar_dense", "is_nonzero", "equal"}


class HostReads(TorchDispatchMode):
    """Notes every aten call that hands a tensor's value to the host."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []
        self.calls = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.calls += 1
        if func.__name__.split(".")[0] in _HOST_READS:
            self.reads.append(str(func))
        return func(*args, **(kwargs or {}))


def _plain_reads(run: Any) -> list[str]:
    mode = HostReads()
    with mode:
        run()
    assert mode.calls > 0  # the mode did see the pass
    return mode.reads


@pytest.mark.parametrize("save", ["all", None])
def test_a_traced_forward_reads_no_value_the_plain_forward_does_not(save: str | None) -> None:
    case = TEST_MODELS["gpt2"]()
    model = case.model.eval()
    with torch.no_grad():
        plain = _plain_reads(lambda: model(*case.args))
        traced = _plain_reads(lambda: lw.trace(model, case.args, save=save))
    assert traced == plain


def test_a_traced_training_step_with_gradients_reads_no_value_the_plain_step_does_not() -> None:
    case = TEST_MODELS["gpt2"]()
    model = case.model.train()
    (ids,) = case.args

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(ids, labels=ids).loss.backward()

    torch.manual_seed(0)
    plain = _plain_reads(step)
    torch.manual_seed(0)
    traced = _plain_reads(
        lambda: lw.trace(model, (ids,), {"labels": ids}, backward=lambda out: out.loss)
    )
    assert traced == plain


def test_the_check_sees_a_host_read() -> None:
    """The mode catches `.item()` and `bool()` (else the tests above could not fail)."""
    x = torch.ones(3)
    reads = _plain_reads(lambda: (x.sum().item(), bool(x[0] > 0)))
    assert len(reads) == 2
