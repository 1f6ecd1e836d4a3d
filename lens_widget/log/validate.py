"""validate(): re-execute each op from its saved inputs and compare with what was saved."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from lens_widget.log.nested import padded
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import ReplayCall, tensor_leaves
from lens_widget.log.saved_call import InputNotSaved, saved_call


class ValidationError(AssertionError):
    """An op did not reproduce its saved activation."""

    def __init__(self, label: str, detail: str) -> None:
        super().__init__(f"op {label!r} does not reproduce its saved activation: {detail}")
        self.label = label


@dataclass
class ValidationReport:
    checked: int = 0
    # label -> why it could not be replayed (an input not saved, ...)
    skipped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.checked} ops replayed and matched, {len(self.skipped)} skipped"


def validate_ops(ops: Iterable[OpRecord], *, rtol: float, atol: float) -> ValidationReport:
    """Replay each op (kind "op") from its saved inputs; raise on the first that differs."""
    report = ValidationReport()
    # Replays of random ops set the RNG; the user's stream must be untouched afterwards.
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        with torch.no_grad():
            for node in ops:
                why_not = _replay_and_compare(node, rtol, atol)
                if why_not is None:
                    report.checked += 1
                else:
                    report.skipped[node.label] = why_not
    finally:
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
    return report


# Getters of what a tensor carries beside its values (its gradient, the tensor it views):
# an optimizer step reads `p.grad`; a replay on a saved copy of `p` cannot.
_STATE_GETTERS = frozenset(
    {torch._C.TensorBase.grad, torch._C.TensorBase._grad, torch._C.TensorBase._base}
)

# Forward-mode AD's: a replay runs outside the dual level the pass made, so it has no tangent.
_FORWARD_AD = frozenset({"_make_dual", "_unpack_dual"})

# Ops whose values are whatever was in memory: only their shape and dtype can be replayed.
_UNINITIALIZED = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"}
)


def _replay_and_compare(node: OpRecord, rtol: float, atol: float) -> str | None:
    if node.failed:
        return "raised during the forward pass"
    if node.intervened:
        return "its output was replaced by an intervention"
    if node.activations is None:
        return node.no_values or "its activation was not saved"
    if node.replay is None or node.replay[0] is None:
        return "no call was recorded for it"
    call = node.replay[0]
    if call.unavailable is not None:
        return call.unavailable
    if call.kwargs.get("generator") is not None:
        # Replaying would draw from (and advance) the user's own generator.
        return "draws from an explicit torch.Generator"
    if getattr(call.func, "__module__", "").startswith("torch.autograd"):
        return "needs the autograd graph of the forward pass, which saved values do not keep"
    if node.func in _FORWARD_AD:
        return "forward-mode AD: a replay runs outside the pass's dual level, without tangents"
    if getattr(call.func, "__self__", None) in _STATE_GETTERS:
        return f"reads its input's .{node.func}, which saved values do not keep"
    try:
        # Copies: a replayed in-place op must not write into the saved values.
        _, args, kwargs, tensors = saved_call(node, copy=True)
    except InputNotSaved as err:
        return str(err)
    try:
        result = _call_as_recorded(call, args, kwargs)
    except Exception as err:  # noqa: BLE001 - a replay that cannot run is reported, not raised
        return f"replay raised {type(err).__name__}: {_first_line(err)}"
    produced = tensor_leaves(result) if result is not None else []
    if node.func == "__setitem__":
        produced = [args[0]]
    elif call.written_slots:  # returned None, wrote these (torch._fused_adam_)
        produced = [tensors[slot] for slot in call.written_slots]
    expected = node.activations
    if len(produced) != len(expected):
        raise ValidationError(
            node.label, f"replay gave {len(produced)} outputs, saved {len(expected)}"
        )
    values = node.func not in _UNINITIALIZED
    for i, (got, want) in enumerate(zip(produced, expected, strict=True)):
        try:
            _compare(node.label, i, got, want, rtol, atol, values=values)
        except ValidationError:
            raise
        except Exception as err:  # noqa: BLE001 - a layout torch cannot compare: reported
            return f"could not compare output {i}: {type(err).__name__}: {_first_line(err)}"
    return None


def _call_as_recorded(call: ReplayCall, args: Any, kwargs: Any) -> Any:
    """The call, under the RNG state and autocast contexts it ran with."""
    if call.rng_state is not None:
        torch.set_rng_state(call.rng_state)
    if call.cuda_rng_states is not None:
        torch.cuda.set_rng_state_all(call.cuda_rng_states)
    with contextlib.ExitStack() as contexts:
        for device_type, dtype in call.autocast:
            contexts.enter_context(torch.autocast(device_type, dtype=dtype))
        return call.func(*args, **kwargs)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _dense(tensor: torch.Tensor) -> torch.Tensor:
    """Sparse values compared as dense ones (torch.equal has no sparse kernel), nested ones
    padded as they were saved (log/nested.py)."""
    if tensor.is_nested:
        return padded(tensor)
    if tensor.layout == torch.sparse_coo:
        return tensor.coalesce().to_dense()
    if tensor.layout != torch.strided:
        return tensor.to_dense()
    return tensor


def _compare(
    label: str,
    i: int,
    got: torch.Tensor,
    want: torch.Tensor,
    rtol: float,
    atol: float,
    *,
    values: bool,
) -> None:
    where = f" (output {i})" if i else ""
    got, want = _dense(got), _dense(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise ValidationError(
            label,
            f"replay gave {tuple(got.shape)} {got.dtype}, "
            f"saved {tuple(want.shape)} {want.dtype}{where}",
        )
    if not values or torch.equal(got, want):
        return
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as err:
        first_line = str(err).strip().splitlines()[0]
        raise ValidationError(label, f"{first_line}{where}") from None
