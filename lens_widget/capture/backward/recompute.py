"""Forward ops that run again inside a backward pass: gradient checkpointing.

``torch.utils.checkpoint`` drops a region's activations in forward and reruns the region
when backward needs them. Those reruns are not new layers: each recomputed op is matched to
the forward op it repeats (same module path, function and call path, as the recorder keys a
layer) and listed in ``log.recomputed``; ``log.ops`` and module pass counts stay as the
forward left them.

The recorder's mode is not active while the engine runs (its handler is running), so the
backward capture pushes a `RecomputeWatcher` in each autograd node's pre-hook: the engine
restores its thread state after every node, so the watcher sees exactly what that node's
backward runs, and nothing after it. Calls made with grad mode off (a custom Function's
backward, tensor hooks) are not matched. A call that writes (an optimizer stepped by a
post-accumulate-grad hook, "optimizer in backward") is not recorded either, but the saved
values it would overwrite are copied first, as before any recorded write.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from lens_widget.capture.backward.unseen_backward import (
    LOOK_FOR_UNSEEN,
    backward_roots,
    unseen_backward_frame,
)
from lens_widget.capture.call_site import find_call_site
from lens_widget.capture.features import NOT_HANDLED, CallInterceptor
from lens_widget.capture.func_facts import BACKWARD_CALLS, FACTS
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves


class PathTracker:
    """Stands in for the module tracker during backward: follows the module path that forward
    ops are keyed by, and records nothing about the modules."""

    def __init__(self, tracker: ModuleTracker) -> None:
        self._tracker = tracker
        self.path: tuple[str, ...] = ()
        self._open: list[tuple[str, ...]] = []

    def enter(self, module: torch.nn.Module, args: Any = (), kwargs: Any = None) -> None:
        self._open.append(self.path)
        if module is self._tracker._root:
            return
        address = self._tracker._addresses.get(id(module))
        if address is None:  # built inside forward and gone since: name it as forward would
            parent = self.path[-1] if self.path else ""
            address = ".".join(filter(None, (parent, f"<{type(module).__name__}>")))
        self.path = (*self.path, address)

    def exit(self, output: Any) -> Any:
        if self._open:
            self.path = self._open.pop()
        return output


class RecomputeMatcher:
    """Which forward op each recomputed op repeats."""

    def __init__(
        self, layers: dict[Any, Any], paths: PathTracker, label_now: Callable[[], None]
    ) -> None:
        self._layers = layers  # the recorder's: (path, function, call path) -> Layer
        # Gives the labels (and so the layers) the trace left for later, before a first match
        self._label_now: Callable[[], None] | None = label_now
        self._paths = paths
        self._last: OpRecord | None = None  # the previous match in the current run
        self.matched: set[OpRecord] = set()  # in the current backward pass
        # (path, function, innermost call site) -> layers, and len(layers) when made
        self._by_innermost: dict[Any, list[Any]] = {}
        self._indexed = -1

    def new_run(self) -> None:
        """An autograd node starts: a following recomputation is a new region."""
        self._last = None

    def match(self, func: Callable[..., Any], frame: Any) -> OpRecord | None:
        facts = FACTS[func]
        if facts.metadata:
            return None
        if self._label_now is not None:
            self._label_now()
            self._label_now = None
        site, _ = find_call_site(frame)
        layer = self._layers.get((self._paths.path, facts.name, site))
        if layer is None:
            layer = self._by_innermost_site(self._paths.path, facts.name, site)
        if layer is None:
            return None
        passes = [layer.first, *layer.later]
        last = self._last
        free = [op for op in passes if op not in self.matched]
        if last is not None:
            # Within a region ops rerun in forward order: the next pass after the last match.
            later = [op for op in free if op.index > last.index]
            chosen = later[0] if later else None
        else:
            # Backward reaches regions last first: the latest pass not matched yet.
            chosen = free[-1] if free else None
        if chosen is not None:
            self.matched.add(chosen)
            self._last = chosen
        return chosen

    def _by_innermost_site(self, path: Any, name: str, site: Any) -> Any:
        """The one layer whose call path starts at the same call site. A region's own code
        (not inside a submodule of it) reruns with no module call above it, so its call path
        runs up the backward's stack instead of forward's: only the innermost site agrees."""
        if self._indexed != len(self._layers):
            self._by_innermost = {}
            for (layer_path, layer_name, layer_site), layer in self._layers.items():
                key = (layer_path, layer_name, _innermost(layer_site))
                self._by_innermost.setdefault(key, []).append(layer)
            self._indexed = len(self._layers)
        found = self._by_innermost.get((path, name, _innermost(site)), ())
        return found[0] if len(found) == 1 else None  # two lines calling one helper: unknown


def _innermost(site: Any) -> Any:
    return site[0] if isinstance(site, tuple) else site


class RecomputeWatcher(TorchFunctionMode):
    """The mode pushed for each autograd node while a backward call runs."""

    lens_widget_own_mode = True  # torch's fast-path checks look past it (fast_paths.py)

    def __init__(
        self,
        matcher: RecomputeMatcher,
        run_nested: Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any],
        note_recomputed: Callable[[OpRecord, list[torch.Tensor]], None],
        before_write: Callable[[list[torch.Tensor]], None],
        hook_unseen: Callable[[tuple[Any, ...]], list[Any]] | None = None,
    ) -> None:
        super().__init__()
        # Hooks the roots of an inner backward this mode cannot see (unseen_backward.py)
        self._hook_unseen = hook_unseen if LOOK_FOR_UNSEEN else None
        # Each unseen inner backward's frame and its hooks' handles
        self._unseen: list[tuple[FrameType, list[Any]]] = []
        self._matcher = matcher
        self._run_nested = run_nested
        self._note_recomputed = note_recomputed
        self._before_write = before_write
        # Inside torch.distributed: engine calls and collectives run in the backward too
        # (distributed_capture.py); it answers NOT_HANDLED for any other call
        self.distributed: CallInterceptor | None = None

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if func in BACKWARD_CALLS:  # a reentrant checkpoint's inner backward
            return self._run_nested(func, args, kwargs or {})
        if self._hook_unseen is not None:
            self._look_for_unseen_backward(sys._getframe(1))
        if self.distributed is not None:
            out = self.distributed.intercept(FACTS[func], func, args, kwargs, sys._getframe(1))
            if out is not NOT_HANDLED:
                return out
        writes = FACTS[func].mutation.targets(args, kwargs or {})
        if writes:
            with torch._C.DisableTorchFunction():
                self._before_write(writes)
        out = func(*args, **kwargs) if kwargs else func(*args)
        if torch.is_grad_enabled():
            with torch._C.DisableTorchFunction():
                original = self._matcher.match(func, sys._getframe(1))
                if original is not None:
                    self._note_recomputed(original, tensor_leaves(out))
        return out

    def _look_for_unseen_backward(self, frame: FrameType) -> None:
        backward_frame = unseen_backward_frame(frame)
        if backward_frame is None or any(seen is backward_frame for seen, _ in self._unseen):
            return
        with torch._C.DisableTorchFunction():
            # Hooks of an inner backward that has returned go, as run_nested's do: a module
            # checkpointed twice reaches the same AccumulateGrad nodes again.
            running = _frames_up(backward_frame)
            for seen, handles in self._unseen:
                if seen not in running:
                    for handle in handles:
                        handle.remove()
            self._unseen = [(seen, h) for seen, h in self._unseen if seen in running]
            hooked = self._hook_unseen(backward_roots(backward_frame))  # pyright: ignore[reportOptionalCall]  # checked by the caller
            self._unseen.append((backward_frame, hooked))


def _frames_up(frame: FrameType | None) -> set[FrameType]:
    """`frame` and every frame that called it, up to the thread's first."""
    frames: set[FrameType] = set()
    while frame is not None:
        frames.add(frame)
        frame = frame.f_back
    return frames
