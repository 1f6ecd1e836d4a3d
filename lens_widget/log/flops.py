"""FLOPs of one recorded op, counted by torch's own formulas.

The recorded call is run again under ``torch.utils.flop_counter.FlopCounterMode`` on fake
tensors (``FakeTensorMode``: shapes, dtypes and devices, no data, no compute) of the shapes
the op saw. Fake tensors keep the op's device, so torch picks the same kernels as in the
real pass: the per-op counts add up to what that counter reports around the real forward.
The counter has torch's formulas plus, through its ``custom_mapping``, the attention kernels
and grouped matrix multiplies torch has none for (``flop_formulas.py``) and the elementwise,
activation and norm kernels (``pointwise_flops.py``: counted only for a call that does no
matrix work); nothing is registered globally. ``torch._grouped_mm`` is counted from its
shapes without running it.
Results are cached per (function, argument shapes, other arguments), so the repeated layers
of a model cost one count.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils import _pytree as pytree

from lens_widget.log.flop_formulas import SHAPE_COUNTED, op_counter_mode
from lens_widget.log.pointwise_flops import recorded_flops
from lens_widget.log.replay import TensorSlot, fill_template


class Recorded(Protocol):
    """What FLOP counting reads of a node (OpRecord has it; records.py imports this file)."""

    # read-only properties: a record's own fields, narrower typed, satisfy them
    @property
    def kind(self) -> str: ...
    @property
    def failed(self) -> bool: ...
    @property
    def requires_grad(self) -> bool: ...
    @property
    def activations(self) -> tuple[torch.Tensor, ...] | None: ...
    @property
    def dtype(self) -> str | None: ...
    @property
    def device(self) -> str | None: ...
    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]: ...
    # (ReplayCall, [(position, producing node, output index)]) or None
    @property
    def replay(self) -> Any: ...


# Logs a traceback for every op its meta kernel refuses (torch._grouped_mm on float32 CPU
# tensors, which the real kernel runs): such an op has no count, and nothing to report.
_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")

_CACHE_LIMIT = 20_000
# (function, argument structure, argument leaves) -> FLOPs (None: no formula reached)
_cache: dict[Hashable, int | None] = {}
_MISSING = object()


@dataclass(frozen=True, slots=True)
class _TensorSpec:
    """What a fake stand-in for a recorded tensor needs (and all the cache key needs)."""

    shape: tuple[int, ...]
    stride: tuple[int, ...] | None
    dtype: torch.dtype
    device: torch.device
    # Kernels can depend on it: CPU attention with a mask that requires grad runs the
    # math path (bmm), without it the fused kernel (flop_formulas.py): both count the same.
    requires_grad: bool


# Argument values that are safe to keep in the cache key: small, hashable, compared by value.
_KEY_TYPES = frozenset(
    {int, float, bool, str, type(None), type(...), _TensorSpec, torch.dtype, torch.device,
     torch.memory_format, torch.layout, torch.Size}
)  # fmt: skip


class _NotCacheable(Exception):
    """An argument the cache key cannot hold by value (a callable, a generator...)."""


def op_flops(node: Recorded) -> int | None:
    """FLOPs of the op's forward call, or None where torch has no formula for any kernel it
    runs (elementwise ops, copies...), where it raised, or where it cannot run without data
    (ops whose output shape depends on values, such as ``nonzero``)."""
    if node.kind != "op" or node.failed or node.replay is None:
        return None
    call, parent_refs = node.replay
    if not parent_refs:  # factories (arange, zeros...): no formula applies, nothing to run
        return None
    maybe = [
        _spec(parent, output_index, call.literals.get(slot))
        for slot, (_, parent, output_index) in enumerate(parent_refs)
    ]
    specs = [spec for spec in maybe if spec is not None]
    if len(specs) < len(maybe):
        return None
    grad = node.requires_grad  # its output required grad: grad mode was on
    try:
        # read from the templates directly: a warm cache costs no argument rebuilding
        key: Hashable = (call.func, grad, _key_of(call.args, specs), _key_of(call.kwargs, specs))
    except _NotCacheable:
        key = None
    found = _cache.get(key, _MISSING) if key is not None else _MISSING
    if found is not _MISSING:
        return found  # pyright: ignore[reportReturnType]  # not _MISSING: an int or None from the cache
    args = fill_template(call.args, specs)
    kwargs = fill_template(call.kwargs, specs)
    flops = _count(call.func, args, kwargs, grad)
    if key is not None:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[key] = flops
    return flops


def _spec(parent: Recorded, output_index: int, literal: torch.Tensor | None) -> _TensorSpec | None:
    """The tensor the op read: from its saved value when there is one (exact strides and
    dtype), else from the producer's recorded shape and dtype."""
    value = literal
    if value is None and parent.activations is not None:
        value = parent.activations[output_index]
    if value is not None:
        grad = parent.requires_grad and (value.is_floating_point() or value.is_complex())
        return _TensorSpec(
            tuple(value.shape), tuple(value.stride()), value.dtype, value.device, grad
        )
    dtype = getattr(torch, parent.dtype or "", None)
    if not isinstance(dtype, torch.dtype) or not parent.device:
        return None
    if output_index >= len(parent.shapes):
        return None
    grad = parent.requires_grad and (dtype.is_floating_point or dtype.is_complex)
    return _TensorSpec(parent.shapes[output_index], None, dtype, torch.device(parent.device), grad)


def _key_of(template: Any, specs: list[_TensorSpec]) -> Hashable:
    """The cache key of an argument template filled with `specs`: its containers by type,
    its values by type and value (the same walk as `fill_template`, without building)."""
    kind = type(template)
    if kind is TensorSlot:
        return specs[template.index]
    if kind is tuple or kind is list:
        return (kind, *(_key_of(v, specs) for v in template))
    if kind is dict:
        return (dict, *((k, _key_of(v, specs)) for k, v in template.items()))
    return _leaf_key(template)  # a PytreeTemplate (rare) is not cacheable


def _leaf_key(leaf: Any) -> Hashable:
    kind = type(leaf)
    if kind in _KEY_TYPES:
        return kind, leaf  # the type too: 1, 1.0 and True hash alike
    if kind is slice:
        return slice, _leaf_key(leaf.start), _leaf_key(leaf.stop), _leaf_key(leaf.step)
    raise _NotCacheable


def _count(func: Callable[..., Any], args: Any, kwargs: Any, grad: bool) -> int | None:
    if func in SHAPE_COUNTED:
        return _shape_counted(SHAPE_COUNTED[func], args, kwargs)
    if any(isinstance(leaf, torch.Generator) for leaf in pytree.tree_leaves((args, kwargs))):
        return None  # a random op drawing from the user's generator: no formula, no draw
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    counter = op_counter_mode()
    # Fake ops draw no random numbers and write no real memory; the RNG is kept anyway,
    # and warnings the op already gave in the real pass are not repeated.
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings(), _fake_tensor_log_off():
        warnings.simplefilter("ignore")
        try:
            with fake_mode:
                fake_args, fake_kwargs = pytree.tree_map_only(
                    _TensorSpec, _fake_tensor, (args, kwargs)
                )
            with fake_mode, counter, torch.set_grad_enabled(grad):
                func(*fake_args, **fake_kwargs)
        except Exception:  # noqa: BLE001 - an op that cannot run on fake tensors has no count
            return None
    return recorded_flops(counter.get_flop_counts().get("Global"))


def _shape_counted(formula: Callable[..., int], args: Any, kwargs: Any) -> int | None:
    """A count from the shapes of the call's tensors, in the order the call takes them."""
    shapes = [
        leaf.shape for leaf in pytree.tree_leaves((args, kwargs)) if isinstance(leaf, _TensorSpec)
    ]
    return formula(*shapes) if len(shapes) >= 2 else None


@contextmanager
def _fake_tensor_log_off() -> Iterator[None]:
    was_disabled = _FAKE_TENSOR_LOG.disabled
    _FAKE_TENSOR_LOG.disabled = True
    try:
        yield
    finally:
        _FAKE_TENSOR_LOG.disabled = was_disabled


def _fake_tensor(spec: _TensorSpec) -> torch.Tensor:
    if spec.stride is None:
        tensor = torch.empty(spec.shape, dtype=spec.dtype, device=spec.device)
    else:
        tensor = torch.empty_strided(spec.shape, spec.stride, dtype=spec.dtype, device=spec.device)
    return tensor.requires_grad_() if spec.requires_grad else tensor
