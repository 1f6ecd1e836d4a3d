"""What the recorder needs to know about a torch function, worked out once per function.

Per function: its name, whether it only reads metadata (passed straight through), whether
it draws random numbers (the RNG state before it is kept for replay) and with which
arguments it draws none, and what it writes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import CodeType, FunctionType
from typing import Any, NamedTuple

import torch

from lens_widget.capture.checkpoint_bookkeeping import BOOKKEEPING_CALLS
from lens_widget.capture.mutation import MutationRule, argument

# Calls that read metadata and never return a tensor: passed straight through.
_METADATA_CALLS = frozenset(
    {
        "dim", "size", "numel", "stride", "storage_offset", "is_contiguous", "element_size",
        "data_ptr", "is_floating_point", "is_complex", "get_device", "item", "tolist",
        "__len__", "__bool__", "__format__", "__repr__", "__hash__", "__index__", "__int__",
        "__float__", "__array__", "untyped_storage", "has_names", "nelement", "ndimension",
        "shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout", "names",
        "is_leaf", "grad_fn", "is_sparse", "is_quantized", "is_meta", "__reduce_ex__",
        "equal", "allclose", "is_nonzero", "is_same_size", "__contains__", "is_set_to",
    }
)  # fmt: skip

# Random calls that torch's own tags do not mark (Python-level wrappers, ops with a dropout
# argument). Everything else is derived: see `draws_random_numbers`.
_RANDOM_CALLS = frozenset(
    {
        "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
        "feature_alpha_dropout", "rrelu", "rrelu_", "gumbel_softmax", "fractional_max_pool2d",
        "fractional_max_pool3d", "multi_head_attention_forward", "rnn_tanh", "rnn_relu",
        "transformer_encoder_layer_fwd", "_native_multi_head_attention",
    }
)  # fmt: skip


class DrawsWhen(NamedTuple):
    """Where a random call's drop probability and training flag sit among its arguments:
    with p == 0 or training False it draws nothing (dropout in eval mode, attention without
    dropout), so no RNG state is kept for it. An eval-mode transformer calls these per layer."""

    p_at: int
    p_names: tuple[str, ...]
    p_default: float
    training_at: int | None = None
    training_names: tuple[str, ...] = ()

    def draws(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
        p = argument(args, kwargs, self.p_at, self.p_names, self.p_default)
        if (type(p) is float or type(p) is int) and p == 0:
            return False
        if self.training_at is None:
            return True
        training = argument(args, kwargs, self.training_at, self.training_names, True)
        return training is not False  # anything but a plain False may draw


_DROPOUTS = (
    "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
    "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
    "feature_dropout_",
)  # fmt: skip
_DRAWS_WHEN = {
    **dict.fromkeys(_DROPOUTS, DrawsWhen(1, ("p",), 0.5, 2, ("training", "train"))),
    "scaled_dot_product_attention": DrawsWhen(4, ("dropout_p",), 0.0),
    "multi_head_attention_forward": DrawsWhen(10, ("dropout_p",), 0.0, 13, ("training",)),
}

# Calls that run the autograd engine: a trace that keeps gradients captures each one as a
# backward pass (backward_capture.py); they always take the recorder's careful path.
BACKWARD_CALLS = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})

# How deep `draws_random_numbers` follows the Python functions a Python function calls.
_MAX_CALL_DEPTH = 3


@functools.cache
def _aten_op_is_random(name: str) -> bool:
    """An aten op of this name that torch tags as drawing from the RNG (uniform_, bernoulli,
    randn_like, native_dropout, scaled_dot_product_attention...)."""
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if packet is None or not hasattr(packet, "overloads"):
        return False
    tag = torch.Tag.nondeterministic_seeded
    return any(tag in getattr(packet, overload).tags for overload in packet.overloads())


def _name_is_random(name: str) -> bool:
    return name in _RANDOM_CALLS or _aten_op_is_random(name)


def _code_is_random(code: CodeType, globals_: dict[str, Any], depth: int) -> bool:
    """A Python function that calls a random op by name (``tensor.uniform_(...)`` in
    ``nn.init.kaiming_uniform_``), itself or through the Python functions it calls."""
    for name in code.co_names:
        if _name_is_random(name):
            return True
        called = globals_.get(name)
        if (
            depth < _MAX_CALL_DEPTH
            and isinstance(called, FunctionType)
            and _code_is_random(called.__code__, called.__globals__, depth + 1)
        ):
            return True
    return any(
        _code_is_random(const, globals_, depth)
        for const in code.co_consts
        if isinstance(const, CodeType)
    )


def draws_random_numbers(func: Callable[..., Any], name: str) -> bool:
    """Whether a call may draw from the global RNG (derived, not a hand-kept list only).

    A false positive only costs a copy of the RNG state per call.
    """
    if _name_is_random(name):
        return True
    function = getattr(func, "__wrapped__", func)
    if isinstance(function, FunctionType):
        return _code_is_random(function.__code__, function.__globals__, 0)
    return False


def identity(tensor: torch.Tensor) -> torch.Tensor:
    """Stands for a module that returned its input unchanged (replays as itself)."""
    return tensor


def _func_name(func: Callable[..., Any]) -> str:
    name = getattr(func, "__name__", None) or type(func).__name__
    if name == "__get__":  # a property getter such as Tensor.T: name it after the property
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _clean(name: str) -> str:
    """Label-friendly function name: __add__ -> add, __getitem__ -> getitem."""
    return name.strip("_") or name


class FuncFacts:
    __slots__ = (
        "name", "clean", "metadata", "random", "draws_when", "mutation", "special",
        "inplace_position", "writes_by_flag", "backward", "unversioned_alias",
        "checkpoint_bookkeeping",
    )  # fmt: skip

    def __init__(self, func: Callable[..., Any]) -> None:
        self.name = _func_name(func)
        self.clean = _clean(self.name)
        self.metadata = self.name in _METADATA_CALLS
        self.random = not self.metadata and draws_random_numbers(func, self.name)
        # For some random calls: which arguments make them draw nothing (None: always draws)
        self.draws_when = _DRAWS_WHEN.get(self.name) if self.random else None
        self.mutation = MutationRule(func, self.name)
        # Calls that always need more than the recorder's fast path: they write to an
        # argument (x.add_, x[i] = v) or run the autograd engine. (Random calls take the
        # fast path: keeping the RNG state reaches no mode.)
        rule = self.mutation
        self.backward = func in BACKWARD_CALLS
        # Tensor.data: an alias of its input with a version counter of its own, so a write
        # through it moves no version the tracer reads on the input (recorder.py).
        self.unversioned_alias = self.name == "data" and getattr(func, "__name__", "") == "__get__"
        # A call torch.utils.checkpoint may make for its own bookkeeping (torch 2.6's dummy
        # `empty`): the careful path asks who called it (checkpoint_bookkeeping.py).
        self.checkpoint_bookkeeping = self.name in BOOKKEEPING_CALLS
        # Under torch.func.jvp, make_dual turns plain inputs into the transform's wrapped
        # tensors: only the careful path sees the transform running (transforms.py).
        self.special = (
            (rule.writes_first or self.backward)
            or self.unversioned_alias
            or self.name == "_make_dual"
            or self.checkpoint_bookkeeping
        )
        # Where an `inplace` flag sits among the positional arguments (F.relu's), if any.
        self.inplace_position = rule.inplace_flag_position
        # An argument decides whether the call writes: an `inplace` flag, or the training
        # flag of a norm with running statistics (batch_norm writes them only in training).
        self.writes_by_flag = self.inplace_position is not None or rule.running_stats is not None


class _FactsCache(dict):
    """Facts per torch function, kept across traces (reading a signature is slow):
    ``FACTS[func]`` works them out on the first call of a function."""

    def __missing__(self, func: Callable[..., Any]) -> FuncFacts:
        facts = self[func] = FuncFacts(func)
        return facts


FACTS: dict[Any, FuncFacts] = _FactsCache()
IDENTITY_FACTS = FuncFacts(identity)


_NO_KWARGS: dict[str, Any] = {}  # read only


def may_write(facts: FuncFacts, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> bool:
    """An `out=` or `inplace=True` argument (F.relu(x, inplace=True), torch.add(a, b, out=c)),
    or a norm updating its running statistics (batch_norm in training)."""
    if kwargs and ("out" in kwargs or kwargs.get("inplace") is True):
        return True
    position = facts.inplace_position
    if position is not None and len(args) > position and args[position] is True:
        return True
    rule = facts.mutation
    return rule.running_stats is not None and bool(rule.targets(args, kwargs or _NO_KWARGS))
