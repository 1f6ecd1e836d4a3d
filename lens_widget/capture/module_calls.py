"""How module calls reach the trackers (module_tracker.py) while a trace runs.

While a trace runs, ``nn.Module._call_impl`` runs `_tracked_call_impl`, which does what
torch's ``_call_impl`` does for a module without hooks (call ``forward``) and tells the
tracing thread's trackers where each module call begins and ends; a module with hooks, or a
call under ``torch.jit.trace``, goes through torch's own ``_call_impl`` (one more frame).
Unlike global forward hooks this keeps module calls on torch's fast path and adds no Python
frame per module level, so a traced forward nests as deep as a plain one. Other threads'
calls go straight to torch's code and are not recorded. Everything is put back when the
last trace ends.

How it is put in place: torch's function object keeps its identity and gets the stand-in's
code (``__code__``), and the one name that code reads beyond torch's own globals,
`_lens_widget_module_calls`, is added to torch's module for the time. Setting any
attribute of ``nn.Module`` instead (as before) makes Python invalidate the attribute caches
of every subclass, 1,854 with transformers imported: ~0.25 ms each way, 2-4 µs per op of a
small model's trace, and every module class's lookups start cold. Where ``_call_impl`` is
no longer torch's function (someone else replaced it), the class attribute is set as
before, with torch's fast path off.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from lens_widget.capture.call_site import mark_module_call

# What a tracker's exit gets when the module call raised (a module may return None itself).
RAISED: Any = object()

_TORCH_CALL_IMPL: Any = nn.Module.__dict__["_call_impl"]
_TORCH_CODE = _TORCH_CALL_IMPL.__code__
_torch_module = sys.modules[nn.Module.__module__]
_TORCH_GLOBALS = vars(_torch_module)
_NAME = "_lens_widget_module_calls"  # the stand-in's one name in torch's module
# torch's module-wide hook registries (filled in place, never rebound), as its _call_impl
# reads them before going straight to forward: the stand-in reads them under torch's names,
# from torch's globals once in place, from these otherwise.
_global_backward_pre_hooks = _torch_module._global_backward_pre_hooks
_global_backward_hooks = _torch_module._global_backward_hooks
_global_forward_hooks = _torch_module._global_forward_hooks
_global_forward_pre_hooks = _torch_module._global_forward_pre_hooks
# ...and the names its fast path reads, in order: with any other torch (a new kind of
# hook), every call goes through torch's _call_impl.
_FAST_PATH_NAMES = (
    "torch", "_C", "_get_tracing_state", "_slow_forward", "forward", "_backward_hooks",
    "_backward_pre_hooks", "_forward_hooks", "_forward_pre_hooks",
    "_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_hooks",
    "_global_forward_pre_hooks",
)  # fmt: skip
_KNOWN_FAST_PATH = _TORCH_CODE.co_names[: len(_FAST_PATH_NAMES)] == _FAST_PATH_NAMES
# torch's code may take the stand-in's: it is torch's own (not another stand-in's, seen at
# import) and has no closure to match.
_SWAPPABLE = _TORCH_CODE.co_name == "_call_impl" and not _TORCH_CODE.co_freevars


def _copy_of(function: Any) -> Any:
    """A function object running `function`'s code: torch's _call_impl as it is while its
    own object runs the stand-in's code."""
    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__,
        function.__closure__,
    )  # fmt: skip
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


_TORCH_COPY = _copy_of(_TORCH_CALL_IMPL)


class _ThreadTrackers(threading.local):
    trackers: tuple[Any, ...] = ()


class _lens_widget_module_calls:  # noqa: N801 - named as the stand-in reads it in torch's globals
    """What the stand-in reads: this thread's trackers, torch's _call_impl to hand a call
    to, whether torch's fast path is known (a call without hooks may go straight to
    forward), and how many traces are active."""

    thread = _ThreadTrackers()
    original: Callable[..., Any] = _TORCH_COPY
    fast = _KNOWN_FAST_PATH
    tracing_state = staticmethod(torch._C._get_tracing_state)
    raised = RAISED
    active = 0
    swapped = False  # torch's function runs the stand-in's code (else the class attribute)
    lock = threading.Lock()


_Calls = _lens_widget_module_calls


def _tracked_call_impl(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    # Runs as torch's function (its globals torch's module's): reads only names found there.
    calls = _lens_widget_module_calls
    trackers = calls.thread.trackers
    call = calls.original
    if not trackers:
        return call(module, *args, **kwargs)
    # torch's _call_impl without hooks calls forward: done here, so no frame is added.
    direct = (
        calls.fast
        and not (
            module._backward_hooks or module._backward_pre_hooks or module._forward_hooks
            or module._forward_pre_hooks or _global_backward_pre_hooks or _global_backward_hooks
            or _global_forward_hooks or _global_forward_pre_hooks
        )
        and not calls.tracing_state()
    )  # fmt: skip
    if len(trackers) == 1:  # one trace: the common case, without loops
        tracker = trackers[0]
        tracker.enter(module, args, kwargs)
        try:
            output = module.forward(*args, **kwargs) if direct else call(module, *args, **kwargs)
        except BaseException:
            tracker.exit(calls.raised)
            raise
        return tracker.exit(output)  # the same object unless an intervention replaced it
    for tracker in trackers:
        tracker.enter(module, args, kwargs)
    try:
        output = module.forward(*args, **kwargs) if direct else call(module, *args, **kwargs)
    except BaseException:
        for tracker in reversed(trackers):
            tracker.exit(calls.raised)
        raise
    for tracker in reversed(trackers):
        output = tracker.exit(output)
    return output


mark_module_call(_tracked_call_impl.__code__)


def install() -> None:
    """Module calls reach this thread's trackers until the matching `uninstall`."""
    with _Calls.lock:
        if _Calls.active == 0:
            current = nn.Module.__dict__["_call_impl"]
            if _SWAPPABLE and current is _TORCH_CALL_IMPL and current.__code__ is _TORCH_CODE:
                # (original and fast are torch's already: set so at import and by uninstall)
                _TORCH_GLOBALS[_NAME] = _Calls
                current.__code__ = _tracked_call_impl.__code__
                _Calls.swapped = True
            else:
                _Calls.original = current
                _Calls.fast = False
                nn.Module._call_impl = _tracked_call_impl  # pyright: ignore[reportAttributeAccessIssue]  # the stand-in (module doc)
        _Calls.active += 1


def uninstall() -> None:
    with _Calls.lock:
        _Calls.active -= 1
        if _Calls.active == 0:
            if _Calls.swapped:
                if _TORCH_CALL_IMPL.__code__ is _tracked_call_impl.__code__:
                    _TORCH_CALL_IMPL.__code__ = _TORCH_CODE
                if _TORCH_GLOBALS.get(_NAME) is _Calls:
                    del _TORCH_GLOBALS[_NAME]
                _Calls.swapped = False
            elif nn.Module.__dict__["_call_impl"] is _tracked_call_impl:
                nn.Module._call_impl = _Calls.original
            _Calls.original = _TORCH_COPY
            _Calls.fast = _KNOWN_FAST_PATH


def add_tracker(tracker: Any) -> None:
    """`tracker` (enter(module, args, kwargs), exit(output)) is told of this thread's module
    calls, after those added before it."""
    thread = _Calls.thread
    thread.trackers = (*thread.trackers, tracker)


def remove_tracker(tracker: Any) -> None:
    thread = _Calls.thread
    thread.trackers = tuple(t for t in thread.trackers if t is not tracker)


def swap_tracker(tracker: Any, stand_in: Any) -> None:
    """Let `stand_in` (an object with enter(module) and exit(output)) take `tracker`'s place
    on this thread: a backward call keeps module calls it runs (checkpoint recomputation)
    out of the module records."""
    thread = _Calls.thread
    thread.trackers = tuple(stand_in if t is tracker else t for t in thread.trackers)
