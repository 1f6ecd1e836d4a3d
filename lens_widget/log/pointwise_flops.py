"""FLOP formulas for the compute torch's counter leaves out: elementwise arithmetic,
activations and normalizations, handed to ``FlopCounterMode`` like flop_formulas.py's.

``torch.utils.flop_counter`` counts matrix work only (mm, bmm, convolution, attention), so a
layer norm, an add or a GELU counted nothing ("no value"). The conventions are those of the
common profilers (fvcore, DeepSpeed's flops profiler): an elementwise op or activation costs
1 FLOP per output element; a layer or group norm 5 per input element with an affine weight,
4 without; a batch norm the same in training, 2 (affine) or 1 per element in inference, where
it only scales and shifts by the running statistics; an RMS norm 4 per element with a weight,
3 without.

An op whose kernels include matrix work counts that work only (torch's formulas): the
scaling and masking inside attention's math path, or the bias add of a module's composite
function, do not add to it (`recorded_flops`), so such an op counts what torch counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

_Shape = Sequence[int]

# aten ops that compute one output element from the same position of their inputs
# (arithmetic and activations; in-place forms too). Not counted: copies, comparisons,
# selections (where, masked_fill) and casts, which do no arithmetic.
_POINTWISE = (
    "add", "sub", "rsub", "mul", "div", "neg", "pow", "sqrt", "rsqrt", "exp", "log",
    "reciprocal", "square", "abs", "tanh", "sigmoid", "erf", "relu", "gelu", "silu",
    "leaky_relu", "elu", "hardtanh", "hardswish", "hardsigmoid", "mish", "softplus", "addcmul",
    "addcdiv", "lerp", "sin", "cos",
)  # fmt: skip


def _numel(shape: Any) -> int:
    return math.prod(shape) if isinstance(shape, (tuple, list, torch.Size)) else 0


def _first_shape(out_shape: Any) -> Any:
    """The shape of an op's (first) output: norms return (output, mean, rstd)."""
    if (
        isinstance(out_shape, (tuple, list))
        and out_shape
        and isinstance(out_shape[0], (tuple, list, torch.Size))
    ):
        return out_shape[0]
    return out_shape


def pointwise_flop(*args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """1 FLOP per output element."""
    return _numel(_first_shape(out_shape))


def _norm_flop(input_shape: _Shape, weight: Any) -> int:
    return _numel(input_shape) * (5 if weight is not None else 4)


def layer_norm_flop(
    input_shape: _Shape, normalized_shape: Any = None, weight: Any = None, *args: Any, **kwargs: Any
) -> int:
    """native_layer_norm(input, normalized_shape, weight, bias, eps)."""
    return _norm_flop(input_shape, weight)


def group_norm_flop(input_shape: _Shape, weight: Any = None, *args: Any, **kwargs: Any) -> int:
    """native_group_norm(input, weight, bias, N, C, HxW, group, eps)."""
    return _norm_flop(input_shape, weight)


def _batch_norm(training: bool) -> Callable[..., int]:
    def flop(input_shape: _Shape, weight: Any = None, *args: Any, **kwargs: Any) -> int:
        per_element = (
            (5 if weight is not None else 4) if training else (2 if weight is not None else 1)
        )
        return _numel(input_shape) * per_element

    return flop


def _batch_norm_either(
    input_shape: _Shape,
    weight: Any,
    bias: Any,
    mean: Any,
    var: Any,
    training: bool,
    *args: Any,
    **kwargs: Any,
) -> int:
    """native_batch_norm and _native_batch_norm_legit: `training` is their sixth argument."""
    return _batch_norm(bool(training))(input_shape, weight)


def rms_norm_flop(
    input_shape: _Shape, normalized_shape: Any = None, weight: Any = None, *args: Any, **kwargs: Any
) -> int:
    """_fused_rms_norm(input, normalized_shape, weight, eps): 4 per element with a weight."""
    return _numel(input_shape) * (4 if weight is not None else 3)


def _formulas() -> dict[Any, Callable[..., int]]:
    aten = torch.ops.aten
    found: dict[Any, Callable[..., int]] = {}
    for name in _POINTWISE:
        for form in (name, f"{name}_"):
            if hasattr(aten, form):
                found[getattr(aten, form)] = pointwise_flop
    norms: Mapping[str, Callable[..., int]] = {
        "native_layer_norm": layer_norm_flop,
        "native_group_norm": group_norm_flop,
        "native_batch_norm": _batch_norm_either,
        "_native_batch_norm_legit": _batch_norm_either,
        "_native_batch_norm_legit_no_training": _batch_norm(training=False),
        "_batch_norm_with_update": _batch_norm(training=True),
        "_batch_norm_no_update": _batch_norm(training=False),
        "_fused_rms_norm": rms_norm_flop,
    }
    for name, formula in norms.items():
        if hasattr(aten, name):
            found[getattr(aten, name)] = formula
    return found


# Kernel (OpOverloadPacket) -> formula on shapes, as FlopCounterMode's custom_mapping takes.
POINTWISE_FLOP_FORMULAS: dict[Any, Callable[..., int]] = _formulas()


def recorded_flops(counts: Mapping[Any, int] | None) -> int | None:
    """The FLOPs of one recorded call from its counter's counts by kernel: its matrix work
    where it has any (what torch counts), else its elementwise and norm work; None where no
    kernel it ran has a formula."""
    if not counts:
        return None
    matrix = [n for kernel, n in counts.items() if kernel not in POINTWISE_FLOP_FORMULAS]
    return sum(matrix) if matrix else sum(counts.values())
