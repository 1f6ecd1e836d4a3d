"""Which standard ONNX op draws a torch op, and with which inputs and attributes.

Only ops that map directly are listed; every other op (and any listed op whose arguments
do not fit, e.g. a softmax without a dim) becomes a node of the custom domain named after
the torch function. The result is a picture of the trace, not an exact conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from typing_extensions import TypeIs

from lens_widget.log.records import OpRecord
from lens_widget.log.replay import TensorSlot

Number = (int, float)


class Call:
    """An op's recorded arguments (tensors as TensorSlots); empty when not recorded."""

    def __init__(self, node: OpRecord) -> None:
        self.node = node
        replay = node.replay
        call = replay[0] if isinstance(replay, tuple) and replay else None
        if call is not None and call.unavailable is not None:
            call = None
        self.known = call is not None
        self.args: tuple[Any, ...] = tuple(call.args) if call is not None else ()
        self.kwargs: dict[str, Any] = dict(call.kwargs) if call is not None else {}

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)

    @property
    def rank(self) -> int:
        return len(self.node.shape) if self.node.shape is not None else 0


# What feeds one ONNX input: a torch argument (index, keyword name), a list argument whose
# tensors are all inputs, or the op's output shape as an int64 constant.
ArgRef = tuple[int, str]
LIST_ARG: Final = "list"
OUTPUT_SHAPE: Final = "output_shape"
ListRef = tuple[Literal["list"], ArgRef]
InputSpec = ArgRef | ListRef | Literal["output_shape"]


def is_list_ref(item: ArgRef | ListRef) -> TypeIs[ListRef]:
    return item[0] == LIST_ARG


Attributes = Callable[[Call], dict[str, Any] | None]


@dataclass(frozen=True)
class Standard:
    op_type: str
    inputs: tuple[InputSpec, ...] = ((0, "input"),)
    attributes: Attributes | None = None
    # Python numbers may stand in for tensors (x * 0.5): they become scalar constants.
    numbers: bool = False
    min_opset: int = 1


def _ints(value: Any, n: int) -> list[int] | None:
    """An int or a sequence of ints as n ints (torch's conv/pool argument style)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value] * n
    if isinstance(value, Sequence) and all(isinstance(v, int) for v in value):
        return list(value) if len(value) == n else None
    return None


def _no_alpha(call: Call) -> dict[str, Any] | None:
    alpha = call.kwargs.get("alpha", 1)
    return {} if alpha == 1 else None


def _axis(index: int, name: str) -> Attributes:
    def attributes(call: Call) -> dict[str, Any] | None:
        dim = call.arg(index, name)
        return {"axis": dim} if isinstance(dim, int) and not isinstance(dim, bool) else None

    return attributes


def _concat_axis(call: Call) -> dict[str, Any] | None:
    dim = call.arg(1, "dim", 0)
    return {"axis": dim} if isinstance(dim, int) and not isinstance(dim, bool) else None


def _gemm(call: Call) -> dict[str, Any]:
    return {"transB": 1}  # torch's weight is (out, in)


def _addmm(call: Call) -> dict[str, Any] | None:
    """torch.addmm(input, mat1, mat2, beta, alpha) is Gemm(mat1, mat2, input) (GPT-2's Conv1D)."""
    alpha, beta = call.kwargs.get("alpha", 1), call.kwargs.get("beta", 1)
    if not all(isinstance(v, Number) and not isinstance(v, bool) for v in (alpha, beta)):
        return None
    return {"alpha": float(alpha), "beta": float(beta)}


def _layer_norm(call: Call) -> dict[str, Any] | None:
    normalized = call.arg(1, "normalized_shape")
    eps = call.arg(4, "eps", 1e-5)
    if not isinstance(normalized, Sequence) or not isinstance(eps, Number):
        return None
    return {"axis": -len(normalized), "epsilon": float(eps)}


def _conv(n: int) -> Attributes:
    def attributes(call: Call) -> dict[str, Any] | None:
        strides = _ints(call.arg(3, "stride", 1), n)
        padding = call.arg(4, "padding", 0)
        dilations = _ints(call.arg(5, "dilation", 1), n)
        groups = call.arg(6, "groups", 1)
        if strides is None or dilations is None or not isinstance(groups, int):
            return None
        result: dict[str, Any] = {"strides": strides, "dilations": dilations, "group": groups}
        if padding == "same":
            result["auto_pad"] = "SAME_UPPER"
        elif padding == "valid":
            result["auto_pad"] = "VALID"
        else:
            pads = _ints(padding, n)
            if pads is None:
                return None
            result["pads"] = pads + pads
        return result

    return attributes


def _pool(n: int, average: bool) -> Attributes:
    def attributes(call: Call) -> dict[str, Any] | None:
        kernel = _ints(call.arg(1, "kernel_size"), n)
        stride = call.arg(2, "stride")
        strides = _ints(stride, n) if stride not in (None, []) else kernel
        pads = _ints(call.arg(3, "padding", 0), n)
        if kernel is None or strides is None or pads is None or len(call.node.shapes) != 1:
            return None
        result: dict[str, Any] = {"kernel_shape": kernel, "strides": strides, "pads": pads + pads}
        if average:
            result["ceil_mode"] = int(bool(call.arg(4, "ceil_mode", False)))
            result["count_include_pad"] = int(bool(call.arg(5, "count_include_pad", True)))
        else:
            dilations = _ints(call.arg(4, "dilation", 1), n)
            if dilations is None:
                return None
            result["dilations"] = dilations
            result["ceil_mode"] = int(bool(call.arg(5, "ceil_mode", False)))
        return result

    return attributes


def _global_pool(call: Call) -> dict[str, Any] | None:
    shape = call.node.shape
    return {} if shape is not None and len(shape) > 2 and all(s == 1 for s in shape[2:]) else None


def _batch_norm(call: Call) -> dict[str, Any] | None:
    eps = call.arg(7, "eps", 1e-5)
    tensors = [call.arg(i, name) for i, name in ((3, "weight"), (4, "bias"))]
    if not all(isinstance(t, TensorSlot) for t in tensors) or not isinstance(eps, Number):
        return None
    return {"epsilon": float(eps)}


def _gelu(call: Call) -> dict[str, Any] | None:
    approximate = call.kwargs.get("approximate", "none")
    return {"approximate": approximate} if approximate in ("none", "tanh") else None


def _dims(call: Call) -> list[int] | None:
    rest = call.args[1:] if call.args else ()
    if len(rest) == 1 and isinstance(rest[0], Sequence):
        rest = tuple(rest[0])
    if not rest:
        rest = tuple(call.kwargs.get("dims", ()))
    return list(rest) if rest and all(isinstance(d, int) for d in rest) else None


def _perm(call: Call) -> dict[str, Any] | None:
    rank, func = call.rank, call.node.func
    perm = list(range(rank))
    if func in ("permute",):
        dims = _dims(call)
        if dims is None or len(dims) != rank:
            return None
        return {"perm": [d % rank for d in dims]}
    if func in ("t", "T") or (func == "mT" and rank >= 2):
        return {"perm": perm[::-1] if func != "mT" else perm[:-2] + perm[-2:][::-1]}
    a, b = call.arg(1, "dim0"), call.arg(2, "dim1")
    if not isinstance(a, int) or not isinstance(b, int) or rank == 0:
        return None
    a, b = a % rank, b % rank
    perm[a], perm[b] = perm[b], perm[a]
    return {"perm": perm}


def _cast(call: Call) -> dict[str, Any] | None:
    # The output's dtype name; the exporter turns it into the ONNX element type.
    return {"to": call.node.dtype} if call.node.dtype is not None else None


def _no_list_output(call: Call) -> dict[str, Any] | None:
    return {} if len(call.node.shapes) == 1 else None


_BINARY = ((0, "input"), (1, "other"))
_REVERSED = ((1, "other"), (0, "input"))


def _table() -> dict[str, Standard]:
    table: dict[str, Standard] = {}

    def add(names: str, spec: Standard) -> None:
        for name in names.split():
            table[name] = spec

    unary = {
        "Relu": "relu relu_", "Tanh": "tanh tanh_", "Sigmoid": "sigmoid sigmoid_",
        "Exp": "exp exp_", "Log": "log log_", "Sqrt": "sqrt sqrt_", "Neg": "neg __neg__ neg_",
        "Abs": "abs abs_ __abs__", "Erf": "erf erf_", "Sin": "sin", "Cos": "cos",
        "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Sign": "sign",
        "Not": "logical_not", "IsNaN": "isnan", "Softplus": "softplus", "Elu": "elu",
        "Selu": "selu", "HardSwish": "hardswish", "Mish": "mish",
        "Identity": "contiguous clone detach identity",
    }  # fmt: skip
    for op_type, names in unary.items():
        add(names, Standard(op_type))
    binary = {
        "Add": "add __add__ __radd__ add_ __iadd__", "Sub": "sub __sub__ sub_ __isub__",
        "Mul": "mul __mul__ __rmul__ mul_ __imul__ multiply",
        "Div": "div __truediv__ div_ __itruediv__ true_divide divide",
        "Pow": "pow __pow__ pow_", "Max": "maximum", "Min": "minimum",
        "Equal": "eq __eq__", "Less": "lt __lt__", "Greater": "gt __gt__",
    }  # fmt: skip
    for op_type, names in binary.items():
        add(names, Standard(op_type, _BINARY, _no_alpha, numbers=True))
    for op_type, names in {"Sub": "__rsub__ rsub", "Div": "__rtruediv__ __rdiv__"}.items():
        add(names, Standard(op_type, _REVERSED, numbers=True))
    add("__rpow__", Standard("Pow", _REVERSED, numbers=True))
    add("matmul __matmul__ mm bmm", Standard("MatMul", _BINARY))
    add("where", Standard("Where", ((0, "condition"), (1, "input"), (2, "other")), numbers=True))
    add("linear", Standard("Gemm", ((0, "input"), (1, "weight"), (2, "bias")), _gemm))
    add("addmm", Standard("Gemm", ((1, "mat1"), (2, "mat2"), (0, "input")), _addmm))
    add("gather", Standard("GatherElements", ((0, "input"), (2, "index")), _axis(1, "dim")))
    for n in (1, 2, 3):
        add(f"conv{n}d", Standard("Conv", ((0, "input"), (1, "weight"), (2, "bias")), _conv(n)))
        add(f"max_pool{n}d", Standard("MaxPool", attributes=_pool(n, average=False)))
        add(f"avg_pool{n}d", Standard("AveragePool", attributes=_pool(n, average=True)))
        add(f"adaptive_avg_pool{n}d", Standard("GlobalAveragePool", attributes=_global_pool))
    norm_inputs = ((0, "input"), (2, "weight"), (3, "bias"))
    add("layer_norm", Standard("LayerNormalization", norm_inputs, _layer_norm, min_opset=17))
    add(
        "batch_norm",
        Standard(
            "BatchNormalization",
            ((0, "input"), (3, "weight"), (4, "bias"), (1, "running_mean"), (2, "running_var")),
            _batch_norm,
        ),
    )
    add("softmax _softmax", Standard("Softmax", attributes=_axis(1, "dim")))
    add("log_softmax", Standard("LogSoftmax", attributes=_axis(1, "dim")))
    add("gelu", Standard("Gelu", attributes=_gelu, min_opset=20))
    add("cat concat concatenate", Standard("Concat", ((LIST_ARG, (0, "tensors")),), _concat_axis))
    add("embedding", Standard("Gather", ((1, "weight"), (0, "input"))))
    add(
        "reshape view flatten unflatten squeeze unsqueeze",
        Standard("Reshape", ((0, "input"), OUTPUT_SHAPE), _no_list_output),
    )
    add("expand broadcast_to", Standard("Expand", ((0, "input"), OUTPUT_SHAPE)))
    add("transpose swapaxes permute t T mT", Standard("Transpose", attributes=_perm))
    add("to type float half double bfloat16 int long bool", Standard("Cast", attributes=_cast))
    add("dropout dropout1d dropout2d dropout3d", Standard("Dropout", attributes=_no_list_output))
    return table


STANDARD_OPS = _table()
