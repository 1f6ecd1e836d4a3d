"""A trace inside torch.distributed: the model's ops as on one process, collectives as ops.

Attached to the recorder (features.py) only when ``torch.distributed`` is initialised, so a
trace outside it pays nothing. It makes every call careful, and the recorder hands it each
call first (`intercept`):

- **Engine bookkeeping** — a call made from an engine's code (engine_frames.py: FSDP's
  copy-in, splits and empties, DDP's input moves, DTensor's wrapping and redistribution
  views) runs as untraced, is not an op, and leaves an `EngineCall` in ``log.engine_calls``.
  Its outputs read as the node of its first input the tracer knows (a view of an
  activation stays that activation), and a saved value it is about to write is copied
  first, as for the model's own writes.
- **Collectives** — a functional collective (``torch.ops._c10d_functional.*``, seen by the
  mode; the ``_functional_collectives`` API, which DTensor's redistributions call also
  inside its dispatch, where no mode sees them) or a c10d call (collectives.py wraps both
  APIs while the trace runs) is an op of the log, named as torch names it (``all_reduce``,
  ``all_gather_into_tensor``...), whose parents are the known tensors it read, with a
  `CollectiveInfo` in ``log.collectives`` (its label -> group, bytes sent, phase, engine).
  Those run in the backward (FSDP's reduce-scatter of gradients, DTensor's) are ops of the
  log too, after the forward's, with phase "backward". DDP's bucket all-reduces are issued
  by its C++ reducer, which no Python hook sees: after each traced backward that
  synchronised they are recorded from the reducer's buckets (``observed=False``).
- **Parameters by name** — a parameter a module holds under a name that the walk at the
  start did not see (FSDP's unsharded parameter, put in place by its pre-forward) is named
  by its slot, with its full shape; a DTensor reads as the node of its local tensor and
  back. FSDP's reshard frees the unsharded parameters' storage, which no version shows:
  saved values sharing it are copied first (`FSDPParam.free_unsharded_param` is wrapped
  while the trace runs).
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist
from torch import nn

from lens_widget.capture.collectives import (
    FUNCOL_COLLECTIVES,
    ApiPatch,
    CallTensors,
    CollectiveLayers,
    c10d_tensors,
    collective_facts,
    funcol_tensors,
    functional_kind,
    functional_tensors,
)
from lens_widget.capture.engine_frames import engine_of, step_phase
from lens_widget.capture.features import NOT_HANDLED, Feature
from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.mode_stack import mode_off_stack
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.sharding import dtensor_type, keep_local_values, placements
from lens_widget.log.distributed import CollectiveInfo, EngineCall
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import ReplayCall, tensor_leaves

if TYPE_CHECKING:
    from lens_widget.capture.recorder import Recorder
    from lens_widget.capture.tensor_book import TensorBook
    from lens_widget.log.model_log import ModelLog

Tensor = torch.Tensor
_REPLAY_NOTE = "a collective: replaying it needs the other ranks"
# c10d's newer names for the same collectives
_SAME_AS = {
    "all_gather_single": "all_gather_into_tensor",
    "reduce_scatter_single": "reduce_scatter_tensor",
}


def distributed_active() -> bool:
    return dist.is_available() and dist.is_initialized()


def unwrap_data_parallel(module: nn.Module) -> tuple[nn.Module, nn.Module | None]:
    """(the model DDP runs, the DDP wrapper) for a DistributedDataParallel module; else
    (`module`, None). A DDP model is traced as the model it wraps: same addresses."""
    parallel = nn.parallel.DistributedDataParallel
    if isinstance(module, parallel):
        inner = module.module
        if isinstance(inner, nn.Module):
            return inner, module
    return module, None


class DistributedCapture(Feature):
    """See the module doc. `wrappers`: the DDP modules around the traced ones."""

    careful = True

    def __init__(self, recorder: Recorder, names: ModelNames, wrappers: list[nn.Module]) -> None:
        self._recorder = cast("Recorder", weakref.proxy(recorder))
        self._recorder_ref = weakref.ref(recorder)  # the object itself, to find on the stack
        self._book = cast("TensorBook", weakref.proxy(recorder.book))
        self._names = names
        self._wrappers = wrappers
        self._thread = threading.get_ident()
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.collectives: list[tuple[OpRecord, CollectiveInfo]] = []
        self.engine_calls: list[EngineCall] = []
        self._in_collective = False  # a c10d call running (all_gather_single calls another)
        self._slots: dict[int, str] = {}  # id(parameter) -> its slot's name, found late
        self._unsharded: dict[str, Tensor] = {}  # name -> the engine's full parameter
        self._dtensor = dtensor_type()
        # The sharded parameters as the walk found them: name -> DTensor
        self._sharded = {
            names.tensors[id(p)][0]: p
            for p in names.params
            if self._dtensor is not None and isinstance(p, self._dtensor)
        }
        self._c10d = ApiPatch.c10d(self._c10d_call)
        self._funcol = ApiPatch.functional(self._funcol_call)
        self._unwrapped: list[tuple[Any, str, Any]] = []
        self._layers = CollectiveLayers(recorder.book.by_label)

    # ---- entering and leaving ---------------------------------------------------------

    def __enter__(self) -> DistributedCapture:
        self._book.late_source = self._late_source
        self._c10d.__enter__()
        self._funcol.__enter__()
        self._wrap_reshard()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._funcol.__exit__()
            self._c10d.__exit__()
        finally:
            for holder, name, original in self._unwrapped:
                setattr(holder, name, original)
            self._unwrapped.clear()
            self._book.late_source = None

    def _wrap_reshard(self) -> None:
        try:
            from torch.distributed.fsdp._fully_shard._fsdp_param import FSDPParam
        except ImportError:
            return
        original = FSDPParam.__dict__.get("free_unsharded_param")
        if original is None:
            return
        book, thread = self._book, self._thread

        def free_unsharded_param(param: Any) -> None:
            unsharded = getattr(param, "_unsharded_param", None)
            if threading.get_ident() == thread and unsharded is not None:
                with torch._C.DisableTorchFunction():
                    book.values.before_write([unsharded])
            original(param)

        self._unwrapped.append((FSDPParam, "free_unsharded_param", original))
        FSDPParam.free_unsharded_param = free_unsharded_param  # pyright: ignore[reportAttributeAccessIssue]

    # ---- the feature's hooks: a DTensor and its local tensor read as one node ----------

    def outputs_noted(self, node: OpRecord, outputs: tuple[Tensor, ...]) -> None:
        dtensor = self._dtensor
        if dtensor is None:
            return
        for i, tensor in enumerate(outputs):
            if isinstance(tensor, dtensor):
                self._point_unknown(tensor._local_tensor, node, i)  # pyright: ignore[reportAttributeAccessIssue]

    def source_added(self, tensor: Tensor, node: OpRecord) -> None:
        if self._dtensor is not None and isinstance(tensor, self._dtensor):
            self._point_unknown(tensor._local_tensor, node, 0)  # pyright: ignore[reportAttributeAccessIssue]

    def _point_unknown(self, tensor: Tensor, node: OpRecord, index: int) -> None:
        if self._book.producer_of(tensor) is None:
            self._book.point(tensor, node, index)

    def _late_source(self, tensor: Tensor) -> tuple[OpRecord, int] | None:
        """The node of a tensor the book does not know, before it becomes a const."""
        book = self._book
        if self._dtensor is not None and isinstance(tensor, self._dtensor):
            produced = book.producer_of(tensor._local_tensor)  # pyright: ignore[reportAttributeAccessIssue]
            if produced is not None:
                book.point(tensor, *produced)
                return produced
        if isinstance(tensor, nn.Parameter):
            name = self._slot_name(tensor)
            if name is not None:
                self._stand_in(name, tensor)
                return book.add_source(tensor, "param", name), 0
        return None

    def _stand_in(self, name: str, tensor: Tensor) -> None:
        """`tensor` is the parameter `name` from now on (its leaf, its gradient, the model's
        size): the full parameter the model ran with, not the shard the walk saw."""
        names = self._names
        names.tensors[id(tensor)] = (name, "param")
        self._unsharded[name] = tensor
        for i, param in enumerate(names.params):
            if names.tensors.get(id(param), ("",))[0] == name:
                names.params[i] = tensor
                return
        names.params.append(tensor)

    def _slot_name(self, tensor: Tensor) -> str | None:
        """The name of the module slot that holds `tensor` now (FSDP's unsharded params)."""
        name = self._slots.get(id(tensor))
        if name is None:
            for module, address in self._modules():
                for own, param in module._parameters.items():
                    if param is not None and id(param) not in self._names.tensors:
                        self._slots[id(param)] = f"{address}.{own}" if address else own
            name = self._slots.get(id(tensor))
        return name

    def _modules(self) -> Iterator[tuple[nn.Module, str]]:
        roots = self._names.roots
        walked = [roots] if isinstance(roots, nn.Module) else list(roots.values())
        addresses = self._names.modules
        for root in walked:
            for module in root.modules():
                address = addresses.get(id(module))
                if address is not None:
                    yield module, address

    # ---- each call, before the recorder's own bookkeeping ------------------------------

    def intercept(
        self,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: FrameType,
    ) -> Any:
        """The call's result when it is the engine's or a collective; else NOT_HANDLED."""
        if self._in_collective:  # part of a collective being recorded (backward watcher)
            return func(*args, **kwargs) if kwargs else func(*args)
        functional = functional_kind(func)
        if functional is not None and functional[1]:
            with torch._C.DisableTorchFunction():
                tensors = functional_tensors(functional[0], args, kwargs or {})
            kind = functional[0].removesuffix("_")
            return self._collective(kind, func, args, kwargs or {}, tensors, frame)
        engine = engine_of(frame, self._recorder.top_frame)
        if not engine and functional is None:
            return NOT_HANDLED
        return self._engine_call(engine or "funcol", facts, func, args, kwargs, frame)

    def _engine_call(
        self,
        engine: str,
        facts: FuncFacts,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        frame: FrameType,
    ) -> Any:
        book = self._book
        with torch._C.DisableTorchFunction():
            writes = facts.mutation.targets(args, kwargs or {})
            if writes and not book.keeps_nothing:
                book.values.before_write(writes)
        out = func(*args, **kwargs) if kwargs else func(*args)
        with torch._C.DisableTorchFunction():
            outputs = tensor_leaves(out) if out is not None else list(writes)
            if not outputs:  # a flag, a profiler range, a hook registered: no data
                return out
            source = self._first_known(tensor_leaves((args, kwargs or {})))
            if source is not None:
                for tensor in outputs:
                    if book.producer_of(tensor) is None:
                        book.point(tensor, *source)
            self.engine_calls.append(
                EngineCall(
                    engine, facts.name, self._module(), step_phase(frame),
                    sum([t.numel() * t.element_size() for t in outputs]),
                )
            )  # fmt: skip
        return out

    def _first_known(self, tensors: list[Tensor]) -> tuple[OpRecord, int] | None:
        book, dtensor = self._book, self._dtensor
        for tensor in tensors:
            produced = book.producer_of(tensor)
            if produced is None and dtensor is not None and isinstance(tensor, dtensor):
                produced = book.producer_of(tensor._local_tensor)  # pyright: ignore[reportAttributeAccessIssue]
            if produced is not None:
                return produced
        return None

    def _module(self) -> str:
        stack = getattr(self._recorder.tracker, "stack", ())  # a backward's path tracker too
        return stack[-1][0] if stack else ""

    # ---- collectives ------------------------------------------------------------------

    def _c10d_call(
        self, name: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if self._in_collective or threading.get_ident() != self._thread:
            return original(*args, **kwargs)
        frame = cast(FrameType, inspect.currentframe()).f_back
        with torch._C.DisableTorchFunction():
            bound = inspect.signature(original).bind(*args, **kwargs)
            tensors = c10d_tensors(name, bound)
        self._in_collective = True
        try:
            return self._collective(
                _SAME_AS.get(name, name), original, args, kwargs, tensors, frame
            )
        finally:
            self._in_collective = False

    def _funcol_call(
        self, name: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if self._in_collective or threading.get_ident() != self._thread:
            return original(*args, **kwargs)
        frame = cast(FrameType, inspect.currentframe()).f_back
        with torch._C.DisableTorchFunction():
            tensors = funcol_tensors(inspect.signature(original).bind(*args, **kwargs))
        self._in_collective = True
        try:
            return self._collective(
                FUNCOL_COLLECTIVES[name], original, args, kwargs, tensors, frame
            )
        finally:
            self._in_collective = False

    def _collective(
        self,
        kind: str,
        func: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tensors: CallTensors,
        frame: FrameType | None,
    ) -> Any:
        """Run a collective with the recorder off the mode stack (its own torch calls are
        part of it), then record it as an op."""
        recorder, book = self._recorder, self._book
        with torch._C.DisableTorchFunction():
            if tensors.writes and not book.keeps_nothing:
                book.values.before_write(tensors.writes)
            parents = [
                (f"{i}", *p) for i, t in enumerate(tensors.reads) if (p := self._first_known([t]))
            ]
        with mode_off_stack(self._recorder_ref()):
            out = func(*args, **kwargs)
        with torch._C.DisableTorchFunction():
            outputs = tuple(tensors.writes) or tuple(tensor_leaves(out))
            # An AsyncCollectiveTensor (waits on first use): its tensor is the output
            wrapped = outputs[0] if len(outputs) == 1 else None
            elem = getattr(wrapped, "elem", None)
            if isinstance(elem, Tensor):
                outputs = (elem,)
            node = self._record(kind, func, parents, outputs, frame)
            if wrapped is not None and elem is not None:
                book.point(wrapped, node, 0)
            engine = engine_of(frame, recorder.top_frame)
            if engine and not tensors.async_op:
                self._keep_copies(node)
            info = CollectiveInfo(
                kind=kind,
                group_ranks=tensors.group_ranks,
                nbytes=sum([t.numel() * t.element_size() for t in tensors.reads]),
                phase=step_phase(frame),
                engine=engine,
                params=self._fsdp_params(frame) if engine == "fsdp" else (),
            )
            self.collectives.append((node, info))
        return out

    def _keep_copies(self, node: OpRecord) -> None:
        """An engine's collective writes into its own buffers, which the engine adds into
        or reuses later where no call shows it (FSDP accumulates gradients into the
        reduce-scatter's output): its saved value is a copy, taken once it finished (a
        synchronous call; on a GPU, ordered on the stream that waited for it)."""
        book = self._book
        where = book.values.locate(node) if not book.keeps_nothing else None
        if where is None or node.activations is None:
            return
        entries, k = where
        copies = tuple(t.detach().clone() for t in node.activations)
        versions: Any = tuple(t._version for t in copies)
        node.activations = copies
        entries[k] = (node, copies, versions[0] if len(copies) == 1 else versions)

    def _fsdp_params(self, frame: FrameType | None) -> tuple[str, ...]:
        """The parameters of the FSDP parameter group whose method issued the collective
        (the nearest frame whose ``self`` holds ``fsdp_params``), by name."""
        addresses = self._names.modules
        for _ in range(32):
            if frame is None:
                break
            group = frame.f_locals.get("self")
            fsdp_params = getattr(group, "fsdp_params", None)
            if isinstance(fsdp_params, list):
                names = []
                for param in fsdp_params:
                    info = getattr(param, "_module_info", None)
                    address = addresses.get(id(getattr(info, "module", None)))
                    if address is not None:
                        own = getattr(info, "param_name", "")
                        names.append(f"{address}.{own}" if address else own)
                return tuple(names)
            frame = frame.f_back
        return ()

    def _record(
        self,
        kind: str,
        func: Callable[..., Any],
        parents: list[tuple[str, OpRecord, int]],
        outputs: tuple[Tensor, ...],
        frame: FrameType | None,
    ) -> OpRecord:
        """A collective's op, labelled by `kind` apart from the model's layers."""
        recorder, book = self._recorder, self._book
        replay = ReplayCall(func, (), {})
        replay.unavailable = _REPLAY_NOTE
        facts = collective_facts(kind, func)
        model_layers, book.layers = book.layers, self._layers
        try:
            return recorder.record(facts, (replay, parents, ()), outputs, (), frame)
        finally:
            book.layers = model_layers

    def finish(self) -> None:
        """Before the log is built: the first passes of repeated collectives get ``:1``."""
        self._recorder.repeated.extend(self._layers.repeated)
        self._layers.repeated.clear()

    def after_backward(self) -> None:
        """After a traced backward: DDP's bucket all-reduces (unless under ``no_sync``), from
        its reducer's buckets."""
        book = self._book
        for wrapper in self._wrappers:
            reducer = getattr(wrapper, "reducer", None)
            if reducer is None or not getattr(wrapper, "require_backward_grad_sync", True):
                continue
            group = getattr(wrapper, "process_group", None)
            with torch._C.DisableTorchFunction():
                buckets = reducer._get_zeros_like_grad_buckets()
                for bucket in buckets:
                    params = bucket.parameters()
                    parents = [
                        (f"{i}", *p) for i, t in enumerate(params) if (p := book.producer_of(t))
                    ]
                    grads = tuple(p.grad for p in params if p.grad is not None)
                    node = self._record("all_reduce", dist.all_reduce, parents, grads, None)
                    buffer = bucket.buffer()
                    info = CollectiveInfo(
                        kind="all_reduce",
                        group_ranks=tuple(dist.get_process_group_ranks(group))
                        if group is not None
                        else tuple(range(self.world_size)),
                        nbytes=buffer.numel() * buffer.element_size(),
                        phase="backward",
                        engine="ddp",
                        observed=False,
                        params=tuple(
                            named[0]
                            for p in params
                            if (named := self._names.tensors.get(id(p))) is not None
                        ),
                    )
                    self.collectives.append((node, info))

    # ---- the log ----------------------------------------------------------------------

    def fill_log(self, log: ModelLog) -> None:
        log.rank, log.world_size = self.rank, self.world_size
        log.collectives = {node.label: info for node, info in self.collectives}
        log.engine_calls = self.engine_calls
        log.placements = placements(
            self._sharded, set(self._unsharded), self._names if self._wrappers else None,
            self.world_size,
        )  # fmt: skip
        if self._dtensor is not None:
            keep_local_values(log, self._dtensor)
