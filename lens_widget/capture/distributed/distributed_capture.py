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
  Recording them is collective_calls.py's (a mixin of this class) and ddp_buckets.py's.
- **Parameters by name** — a parameter a module holds under a name that the walk at the
  start did not see (FSDP's unsharded parameter, put in place by its pre-forward) is named
  by its slot, with its full shape; a DTensor reads as the node of its local tensor and
  back. FSDP's reshard frees the unsharded parameters' storage, which no version shows:
  saved values sharing it are copied first (`FSDPParam.free_unsharded_param` is wrapped
  while the trace runs). Naming them is late_parameters.py's.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist
from torch import nn

from lens_widget.capture.distributed.collective_calls import CollectiveCalls
from lens_widget.capture.distributed.collectives import (
    ApiPatch,
    CollectiveLayers,
    functional_kind,
    functional_tensors,
)
from lens_widget.capture.distributed.ddp_buckets import ddp_bucket_collectives
from lens_widget.capture.distributed.engine_frames import engine_of, step_phase
from lens_widget.capture.distributed.late_parameters import LateParameters
from lens_widget.capture.distributed.sharding import dtensor_type, keep_local_values, placements
from lens_widget.capture.features import NOT_HANDLED, Feature
from lens_widget.capture.func_facts import FuncFacts
from lens_widget.capture.model_names import ModelNames
from lens_widget.log.distributed import CollectiveInfo, EngineCall
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves

if TYPE_CHECKING:
    from lens_widget.capture.recorder import Recorder
    from lens_widget.capture.tensor_book import TensorBook
    from lens_widget.log.model_log import ModelLog

Tensor = torch.Tensor


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


class DistributedCapture(CollectiveCalls, Feature):
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
        self._dtensor = dtensor_type()
        self._late = LateParameters(names, self._book, self._dtensor)
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
        self._book.late_source = self._late.late_source
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

    def _module(self) -> str:
        stack = getattr(self._recorder.tracker, "stack", ())  # a backward's path tracker too
        return stack[-1][0] if stack else ""

    # ---- after the pass, after each backward -------------------------------------------

    def finish(self) -> None:
        """Before the log is built: the first passes of repeated collectives get ``:1``."""
        self._recorder.repeated.extend(self._layers.repeated)
        self._layers.repeated.clear()

    def after_backward(self) -> None:
        """After a traced backward: DDP's bucket all-reduces (unless under ``no_sync``), from
        its reducer's buckets."""
        self.collectives.extend(
            ddp_bucket_collectives(
                self._wrappers, self._book, self._names, self.world_size, self._record
            )
        )

    # ---- the log ----------------------------------------------------------------------

    def fill_log(self, log: ModelLog) -> None:
        log.rank, log.world_size = self.rank, self.world_size
        log.collectives = {node.label: info for node, info in self.collectives}
        log.engine_calls = self.engine_calls
        log.placements = placements(
            self._sharded, set(self._late.unsharded), self._names if self._wrappers else None,
            self.world_size,
        )  # fmt: skip
        if self._dtensor is not None:
            keep_local_values(log, self._dtensor)
