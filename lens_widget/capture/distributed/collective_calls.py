"""Collectives recorded as ops of a trace inside torch.distributed: a c10d call, a call of
the ``_functional_collectives`` API (collectives.py wraps both while the trace runs) or a
functional collective the mode sees, run with the recorder off the mode stack and recorded
as one op named as torch names it, with a `CollectiveInfo` (group, bytes sent, phase,
engine, the FSDP parameter group it serves).

A mixin of DistributedCapture (distributed_capture.py), which holds the state named below
and hands each call here from its interceptor or from the wrapped APIs.
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import torch

from lens_widget.capture.distributed.collectives import (
    FUNCOL_COLLECTIVES,
    CallTensors,
    CollectiveLayers,
    c10d_tensors,
    collective_facts,
    funcol_tensors,
)
from lens_widget.capture.distributed.engine_frames import engine_of, step_phase
from lens_widget.capture.mode_stack import mode_off_stack
from lens_widget.capture.model_names import ModelNames
from lens_widget.log.distributed import CollectiveInfo
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import ReplayCall, tensor_leaves

if TYPE_CHECKING:
    from lens_widget.capture.recorder import Recorder
    from lens_widget.capture.tensor_book import TensorBook

Tensor = torch.Tensor
_REPLAY_NOTE = "a collective: replaying it needs the other ranks"
# c10d's newer names for the same collectives
_SAME_AS = {
    "all_gather_single": "all_gather_into_tensor",
    "reduce_scatter_single": "reduce_scatter_tensor",
}


class CollectiveCalls:
    """Records collectives into `collectives`: (op, its CollectiveInfo), in call order."""

    # DistributedCapture's, set in its constructor
    _recorder: Recorder  # a weak proxy
    _recorder_ref: weakref.ref[Recorder]  # the object itself, to find on the stack
    _book: TensorBook  # a weak proxy
    _names: ModelNames
    _thread: int  # the thread tracing: collectives of other threads are not recorded
    _dtensor: type | None
    _layers: CollectiveLayers
    _in_collective: bool  # a c10d call running (all_gather_single calls another)
    collectives: list[tuple[OpRecord, CollectiveInfo]]

    def _c10d_call(
        self, name: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self._api_call(
            _SAME_AS.get(name, name), original, args, kwargs, lambda b: c10d_tensors(name, b)
        )

    def _funcol_call(
        self, name: str, original: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self._api_call(FUNCOL_COLLECTIVES[name], original, args, kwargs, funcol_tensors)

    def _api_call(
        self,
        kind: str,
        original: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        tensors_of: Callable[[inspect.BoundArguments], CallTensors],
    ) -> Any:
        """A call of a wrapped API (`_c10d_call`, `_funcol_call`), recorded as `kind`."""
        if self._in_collective or threading.get_ident() != self._thread:
            return original(*args, **kwargs)
        # the frame that called the API: above _api_call and the wrapper that called it
        frame = cast(FrameType, cast(FrameType, inspect.currentframe()).f_back).f_back
        with torch._C.DisableTorchFunction():
            tensors = tensors_of(inspect.signature(original).bind(*args, **kwargs))
        self._in_collective = True
        try:
            return self._collective(kind, original, args, kwargs, tensors, frame)
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

    def _first_known(self, tensors: list[Tensor]) -> tuple[OpRecord, int] | None:
        book, dtensor = self._book, self._dtensor
        for tensor in tensors:
            produced = book.producer_of(tensor)
            if produced is None and dtensor is not None and isinstance(tensor, dtensor):
                produced = book.producer_of(tensor._local_tensor)  # pyright: ignore[reportAttributeAccessIssue]
            if produced is not None:
                return produced
        return None
