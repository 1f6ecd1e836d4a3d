"""What a collective call reads, writes and moves, for the c10d API and functional collectives.

The c10d API (``dist.all_reduce``, ``dist.all_gather_into_tensor``...) is Python calling a
ProcessGroup method, which no TorchFunctionMode sees: `C10dPatch` puts a wrapper in place of
each function, in ``torch.distributed`` and ``torch.distributed.distributed_c10d``, while a
trace runs, and puts the very same objects back on exit. Functional collectives
(``torch.ops._c10d_functional.*``, what ``_functional_collectives`` and DTensor call) are torch
ops, which the mode sees: `functional_kind` tells a collective from their bookkeeping
(``wait_tensor``, ``_wrap_tensor_autograd``). `CollectiveLayers` labels collectives apart
from the model's layers.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.distributed.distributed_c10d as c10d

from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.links import Layer, Layers
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves

Tensor = torch.Tensor
# A functional collective's group name -> its ProcessGroup (torch keeps this private)
_resolve_group: Callable[[str], Any] = getattr(c10d, "_resolve_process_group")  # noqa: B009

# c10d function -> (the arguments it reads, the arguments it writes)
C10D_COLLECTIVES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "all_reduce": (("tensor",), ("tensor",)),
    "all_reduce_coalesced": (("tensors",), ("tensors",)),
    "broadcast": (("tensor",), ("tensor",)),
    "reduce": (("tensor",), ("tensor",)),
    "all_gather": (("tensor",), ("tensor_list",)),
    "all_gather_into_tensor": (("input_tensor",), ("output_tensor",)),
    "all_gather_single": (("input_tensor",), ("output_tensor",)),
    "all_gather_coalesced": (("input_tensor_list",), ("output_tensor_lists",)),
    "gather": (("tensor",), ("gather_list",)),
    "scatter": (("scatter_list",), ("tensor",)),
    "reduce_scatter": (("input_list",), ("output",)),
    "reduce_scatter_tensor": (("input",), ("output",)),
    "reduce_scatter_single": (("input",), ("output",)),
    "all_to_all": (("input_tensor_list",), ("output_tensor_list",)),
    "all_to_all_single": (("input",), ("output",)),
}

# Functional collectives that move data; the namespace's other ops are bookkeeping.
_FUNCTIONAL = frozenset(
    {
        "all_reduce", "all_reduce_", "all_reduce_coalesced", "all_reduce_coalesced_",
        "all_gather_into_tensor", "all_gather_into_tensor_out",
        "all_gather_into_tensor_coalesced", "reduce_scatter_tensor",
        "reduce_scatter_tensor_coalesced", "all_to_all_single", "broadcast", "broadcast_",
    }
)  # fmt: skip
_NAMESPACES = frozenset({"_c10d_functional", "_c10d_functional_autograd", "c10d_functional"})


class CallTensors(NamedTuple):
    """A collective call's tensors: those it reads, those it writes, its group; whether it
    returns before its outputs are written (``async_op=True``, a functional collective)."""

    reads: list[Tensor]
    writes: list[Tensor]
    group_ranks: tuple[int, ...]
    async_op: bool = True


def group_ranks(group: Any) -> tuple[int, ...]:
    """The global ranks of a process group (None: the default group), or of a functional
    collective's group name."""
    if isinstance(group, str):
        group = _resolve_group(group)
    return tuple(
        dist.get_process_group_ranks(group if group is not None else c10d.GroupMember.WORLD)
    )


def functional_kind(func: Any) -> tuple[str, bool] | None:
    """(op name, whether it is a collective) for an op of the functional collectives'
    namespaces; None for any other function."""
    if not isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return None
    namespace, _, name = func._qualified_op_name.partition("::") if isinstance(
        func, torch._ops.OpOverloadPacket
    ) else (func.namespace, "", func._opname)  # fmt: skip
    if namespace not in _NAMESPACES:
        return None
    return name, name in _FUNCTIONAL


def functional_tensors(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallTensors:
    """A functional collective reads its tensor arguments; its group is its last string."""
    reads = tensor_leaves((args, kwargs))
    group_name = next((a for a in reversed(args) if isinstance(a, str)), None)
    if group_name is None:
        group_name = kwargs.get("group_name")
    ranks = group_ranks(group_name) if isinstance(group_name, str) else ()
    writes = reads[:1] if name.endswith("_") else []
    if name == "all_gather_into_tensor_out":
        writes = tensor_leaves(kwargs.get("out", ()))
    return CallTensors(reads, writes, ranks)


def c10d_tensors(name: str, bound: inspect.BoundArguments) -> CallTensors:
    read_names, write_names = C10D_COLLECTIVES[name]
    arguments = bound.arguments
    reads = tensor_leaves([arguments.get(n) for n in read_names])
    writes = tensor_leaves([arguments.get(n) for n in write_names])
    async_op = bool(arguments.get("async_op", False))
    return CallTensors(reads, writes, group_ranks(arguments.get("group")), async_op)


# The functional collectives' Python API (what DTensor's placements call, also inside its
# dispatch, where no mode sees the ops) -> the collective's kind
FUNCOL_COLLECTIVES: dict[str, str] = {
    "all_reduce": "all_reduce",
    "all_gather_single": "all_gather_into_tensor",
    "all_gather_single_autograd": "all_gather_into_tensor",
    "all_gather_tensor": "all_gather_into_tensor",
    "all_gather_tensor_autograd": "all_gather_into_tensor",
    "reduce_scatter_single": "reduce_scatter_tensor",
    "reduce_scatter_single_autograd": "reduce_scatter_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "reduce_scatter_tensor_autograd": "reduce_scatter_tensor",
    "all_to_all_single": "all_to_all_single",
    "all_to_all_single_autograd": "all_to_all_single",
    "broadcast": "broadcast",
}


def funcol_tensors(bound: inspect.BoundArguments) -> CallTensors:
    """A functional collective of the Python API reads its first argument."""
    arguments = bound.arguments
    first = next(iter(arguments.values()), None)
    reads = [first] if isinstance(first, Tensor) else []
    name = _group_name(arguments.get("group"), arguments.get("tag", ""))
    return CallTensors(reads, [], group_ranks(name) if name is not None else ())


def _group_name(group: Any, tag: Any) -> str | None:
    resolve = getattr(funcol, "_resolve_group_name", None)
    if group is None or resolve is None:
        return None
    return str(resolve(group, tag if isinstance(tag, str) else ""))


CollectiveCall = Callable[[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]


def _c10d_holders() -> list[Any]:
    """Modules holding the c10d collectives: torch.distributed, its c10d module, and
    DTensor's helpers, which import broadcast and scatter by name."""
    holders: list[Any] = [c10d, dist]
    try:
        from torch.distributed.tensor import _collective_utils
    except ImportError:
        return holders
    return [*holders, _collective_utils]


class ApiPatch:
    """While entered, each function of `names` in `primary` (and wherever `holders` hold
    the same object) runs through `on_call(name, original, args, kwargs)`; the original
    functions are put back on exit (also when the code raised)."""

    def __init__(
        self, primary: Any, holders: list[Any], names: Iterable[str], on_call: CollectiveCall
    ) -> None:
        self._primary, self._holders, self._names = primary, holders, tuple(names)
        self._on_call = on_call
        self._saved: list[tuple[Any, str, Any]] = []

    @classmethod
    def c10d(cls, on_call: CollectiveCall) -> ApiPatch:
        return cls(c10d, _c10d_holders(), C10D_COLLECTIVES, on_call)

    @classmethod
    def functional(cls, on_call: CollectiveCall) -> ApiPatch:
        return cls(funcol, [funcol], FUNCOL_COLLECTIVES, on_call)

    def _targets(self) -> Iterator[tuple[Any, str, Any]]:
        for name in self._names:
            original = getattr(self._primary, name, None)
            if original is None:
                continue
            for holder in self._holders:
                if getattr(holder, name, None) is original:
                    yield holder, name, original

    def __enter__(self) -> ApiPatch:
        wrappers: dict[str, Any] = {}
        for holder, name, original in list(self._targets()):
            wrapper = wrappers.get(name)
            if wrapper is None:
                wrapper = wrappers[name] = self._wrap(name, original)
            self._saved.append((holder, name, original))
            setattr(holder, name, wrapper)
        return self

    def __exit__(self, *exc: object) -> None:
        for holder, name, original in reversed(self._saved):
            setattr(holder, name, original)
        self._saved.clear()

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        on_call = self._on_call

        @functools.wraps(original)
        def collective(*args: Any, **kwargs: Any) -> Any:
            return on_call(name, original, args, kwargs)

        return collective


class CollectiveLayers(Layers):
    """Labels of collectives, counted apart from the model's layers (``all_reduce_1``,
    ``all_gather_into_tensor_2``): the model's ops keep the labels an undistributed trace
    gives them."""

    def place(self, node: OpRecord, key: tuple[Any, str, Any]) -> None:
        if key not in self.by_key:  # a new layer, named by the collective alone
            name = key[1]
            count = self._func_counts[name] = self._func_counts.get(name, 0) + 1
            self.by_key[key] = Layer(f"{name}_{count}")
        super().place(node, key)  # its pass and label, as any layer's


_FACTS_BY_KIND: dict[str, FuncFacts] = {}


def collective_facts(kind: str, func: Callable[..., Any]) -> FuncFacts:
    """FuncFacts of `func` named `kind` (the collective's name, whichever API called it)."""
    facts = _FACTS_BY_KIND.get(kind)
    if facts is None:
        facts = _FACTS_BY_KIND[kind] = FuncFacts(func)
        facts.name = facts.clean = kind
    return facts
