"""Which module (and which call of it) is running.

While a trace runs, ``nn.Module._call_impl`` is replaced by `_tracked_call_impl`, which
does what torch's ``_call_impl`` does for a module without hooks (call ``forward``) and tells
the tracing thread's trackers where each module call begins and ends; a module with hooks, or
a call under ``torch.jit.trace``, goes through torch's own ``_call_impl`` (one more frame).
Unlike global forward hooks this keeps module calls on torch's fast path and adds no Python
frame per module level, so a traced forward nests as deep as a plain one. The original is
put back when the last trace ends; other threads' calls go straight to it and are not
recorded.

``_call_impl`` rather than ``__call__``: setting a dunder on ``nn.Module`` makes Python
update the call slot of every subclass (~0.4 ms each way with transformers imported, more
than a small model's whole bookkeeping); a plain attribute costs a tenth of that.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from lens_widget.capture.call_site import mark_module_call
from lens_widget.capture.class_names import class_label
from lens_widget.capture.model_names import ModelNames
from lens_widget.log.records import ModuleInfo

ModuleStack = tuple[tuple[str, int], ...]
_new_object = object.__new__


def _ignore_output(address: str, pass_index: int, output: Any, entry: Any, depth: int) -> Any:
    """The output callback once tracing is over."""
    return output


# What exit() gets when the module call raised (a module may return None itself).
RAISED: Any = object()


class _ThreadTrackers(threading.local):
    trackers: tuple[ModuleTracker, ...] = ()


_THREAD = _ThreadTrackers()
_PATCH_LOCK = threading.Lock()
_TORCH_CALL_IMPL = nn.Module._call_impl
_torch_module = sys.modules[nn.Module.__module__]
# torch's module-wide hook registries (filled in place, never rebound), as its _call_impl
# reads them before going straight to forward...
_global_backward_pre_hooks = _torch_module._global_backward_pre_hooks
_global_backward_hooks = _torch_module._global_backward_hooks
_global_forward_hooks = _torch_module._global_forward_hooks
_global_forward_pre_hooks = _torch_module._global_forward_pre_hooks
_tracing_state = torch._C._get_tracing_state
# ...and the names its fast path reads, in order: with any other torch (a new kind of
# hook), every call goes through torch's _call_impl.
_FAST_PATH_NAMES = (
    "torch", "_C", "_get_tracing_state", "_slow_forward", "forward", "_backward_hooks",
    "_backward_pre_hooks", "_forward_hooks", "_forward_pre_hooks",
    "_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_hooks",
    "_global_forward_pre_hooks",
)  # fmt: skip
_KNOWN_FAST_PATH = _TORCH_CALL_IMPL.__code__.co_names[: len(_FAST_PATH_NAMES)] == _FAST_PATH_NAMES


class _Patch:
    """nn.Module._call_impl as it was before the first active trace, and how many traces
    are active."""

    original: Callable[..., Any] = _TORCH_CALL_IMPL
    # The original is torch's, whose fast path is known: a call without hooks may go
    # straight to forward.
    fast = _KNOWN_FAST_PATH
    active = 0


def _tracked_call_impl(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    trackers = _THREAD.trackers
    call = _Patch.original
    if not trackers:
        return call(module, *args, **kwargs)
    # torch's _call_impl without hooks calls forward: done here, so no frame is added.
    direct = (
        _Patch.fast
        and not (
            module._backward_hooks or module._backward_pre_hooks or module._forward_hooks
            or module._forward_pre_hooks or _global_backward_pre_hooks or _global_backward_hooks
            or _global_forward_hooks or _global_forward_pre_hooks
        )
        and not _tracing_state()
    )  # fmt: skip
    if len(trackers) == 1:  # one trace: the common case, without loops
        tracker = trackers[0]
        tracker.enter(module, args, kwargs)
        try:
            output = module.forward(*args, **kwargs) if direct else call(module, *args, **kwargs)
        except BaseException:
            tracker.exit(RAISED)
            raise
        return tracker.exit(output)  # the same object unless an intervention replaced it
    for tracker in trackers:
        tracker.enter(module, args, kwargs)
    try:
        output = module.forward(*args, **kwargs) if direct else call(module, *args, **kwargs)
    except BaseException:
        for tracker in reversed(trackers):
            tracker.exit(RAISED)
        raise
    for tracker in reversed(trackers):
        output = tracker.exit(output)
    return output


mark_module_call(_tracked_call_impl.__code__)


def _install() -> None:
    with _PATCH_LOCK:
        if _Patch.active == 0:
            _Patch.original = nn.Module.__dict__["_call_impl"]
            _Patch.fast = _Patch.original is _TORCH_CALL_IMPL and _KNOWN_FAST_PATH
            nn.Module._call_impl = _tracked_call_impl  # pyright: ignore[reportAttributeAccessIssue]  # the patch of Module._call_impl (module_tracker docstring)
        _Patch.active += 1


def _uninstall() -> None:
    with _PATCH_LOCK:
        _Patch.active -= 1
        if _Patch.active == 0:
            if nn.Module.__dict__["_call_impl"] is _tracked_call_impl:
                nn.Module._call_impl = _Patch.original
            _Patch.original = _TORCH_CALL_IMPL
            _Patch.fast = _KNOWN_FAST_PATH


def swap_tracker(tracker: Any, stand_in: Any) -> None:
    """Let `stand_in` (an object with enter(module) and exit(output)) take `tracker`'s place
    on this thread: a backward call keeps module calls it runs (checkpoint recomputation)
    out of the module records."""
    _THREAD.trackers = tuple(stand_in if t is tracker else t for t in _THREAD.trackers)


# Told of each outermost module call (one that no other module call encloses) before it
# runs: (module, its address, args, kwargs). A section names the tensors passed to it.
OuterCallHook = Callable[[torch.nn.Module, str, tuple[Any, ...], dict[str, Any]], None]


class ModuleTracker:
    """Maintains the stack of (address, pass) of the modules currently running.

    `root` is the traced model, whose calls are the whole log rather than a group inside it
    (address ""); a section of several models (or none) has no root: every outermost call
    is a module under "".
    """

    def __init__(
        self,
        root: torch.nn.Module | None,
        names: ModelNames,
        # (address, pass, output, stack entry, stack depth inside the call) -> the output the
        # module's caller gets: `output` unless an intervention replaced it.
        on_module_output: Callable[[str, int, Any, tuple[str, int] | None, int], Any],
        ops: list[Any],
        on_outer_call: OuterCallHook | None = None,
    ) -> None:
        self._root = root
        self._on_outer_call = on_outer_call
        self._addresses = names.modules
        self._compiled = names.compiled
        # (module, its compiled call) of those running eagerly while this tracker is entered
        self._eager: list[tuple[nn.Module, Any]] = []
        # address -> the module outside the traced ones that has it (see _address)
        self._unreached: dict[str, weakref.ref[torch.nn.Module]] = {}
        # The recorder's module outputs (module_outputs.py); rebound when a feature hooks them
        self.on_module_output = on_module_output
        self._ops = ops  # the ops recorded so far: a module's n_ops is how many its calls add
        self.modules: dict[str, ModuleInfo] = {}
        self.stack: ModuleStack = ()
        # The stack without pass numbers: part of the key that folds an op's passes.
        self.path: tuple[str, ...] = ()
        # per open module call: (stack, path) to restore, its info, pass, stack entry, ops
        # recorded before it
        self._open: list[tuple[ModuleStack, tuple[str, ...], ModuleInfo, int, Any, int]] = []
        self._entered = False
        # Wrappers whose calls are no module call (DDP around the traced model: its model
        # keeps its own addresses), by id; per open one, how many calls were open under it
        self.see_through: frozenset[int] = frozenset()
        self._through: list[int] = []

    def __enter__(self) -> ModuleTracker:
        _install()
        self._entered = True
        _THREAD.trackers = (*_THREAD.trackers, self)
        # torch calls a module compiled in place without its _call_impl: it runs eagerly
        # while traced, so its calls are tracked (put back in __exit__).
        for module in self._compiled:
            compiled = module._compiled_call_impl
            if compiled is not None:
                self._eager.append((module, compiled))
                module._compiled_call_impl = None
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._entered:
            return
        self._entered = False
        for module, compiled in self._eager:
            module._compiled_call_impl = compiled
        self._eager.clear()
        _THREAD.trackers = tuple(t for t in _THREAD.trackers if t is not self)
        _uninstall()
        # The callbacks are bound methods of the recorder's parts, which the recorder holds
        # with this tracker: drop them, so the log's tensors are freed as soon as the log
        # is, not at the next gc run.
        self.on_module_output = _ignore_output
        self._on_outer_call = None

    def _address(self, module: torch.nn.Module) -> str:
        """A module the traced ones do not reach (built inside forward; in a section, one
        not given): `<Class>` under the module calling it, and its submodules under that as
        in the model (`<Sequential>.0`). Another such module there while the first is alive
        is `<Class>#2` (siblings stay apart); one built anew on each call takes the address
        of the one before, which is gone, so its calls fold into passes."""
        address = self._addresses.get(id(module))
        if address is None:
            parent = self.stack[-1][0] if self.stack else ""  # under the module calling it
            base = ".".join(filter(None, (parent, f"<{type(module).__name__}>")))
            address, n = base, 1
            while (holder := self._unreached.get(address)) is not None and holder() is not None:
                n += 1
                address = f"{base}#{n}"
            self._unreached[address] = weakref.ref(module)
            for name, submodule in module.named_modules():
                self._addresses.setdefault(id(submodule), f"{address}.{name}" if name else address)
        return address

    @property
    def in_module_call(self) -> bool:
        """Some module call (the root's included) is running."""
        return bool(self._open)

    def enter(self, module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if self.see_through and id(module) in self.see_through:
            self._through.append(len(self._open))
            return
        address = self._addresses.get(id(module))
        if address is None:
            address = self._address(module)
        if self._on_outer_call is not None and not self._open:
            self._on_outer_call(module, address, args, kwargs)
        info = self.modules.get(address)
        if info is None:
            info = self._new_info(module, address)
            n_passes = 1
        else:
            n_passes = info.n_passes = info.n_passes + 1
        stack = self.stack
        if module is self._root:  # the root is the whole log, not a group inside it
            self._open.append((stack, self.path, info, n_passes, None, len(self._ops)))
            return
        entry = (address, n_passes)
        path = self.path
        self._open.append((stack, path, info, n_passes, entry, len(self._ops)))
        self.stack = stack + (entry,)  # faster than (*stack, entry)
        self.path = path + (address,)

    def _new_info(self, module: torch.nn.Module, address: str) -> ModuleInfo:
        """The module's info at its first call (n_passes 1): made without the dataclass's
        __init__ (~0.3 µs less warm, more between a real model's kernels), every field set
        by name in ModuleInfo's order (the order its __init__ sets them)."""
        stack = self.stack
        info = _new_object(ModuleInfo)
        info.address = address
        info.class_name = class_label(type(module))  # "lora.Linear" for peft's, not "Linear"
        info.parent = stack[-1][0] if stack else ("" if module is not self._root else None)
        info.n_passes = 1
        info.n_ops = 0
        info.outputs = {}
        info.output_leaves = {}
        self.modules[address] = info
        return info

    def exit(self, output: Any) -> Any:
        """The module call that entered last returned `output` (RAISED when it raised); what
        its caller gets."""
        if self._through and self._through[-1] == len(self._open):
            self._through.pop()  # a see-through wrapper's call
            return output
        if not self._open:
            return output
        stack, path, info, n_passes, entry, ops_before = self._open[-1]
        try:
            # `entry` is the stack's top while the module ran (None for the root): the ops
            # inside that call are those whose module_stack holds this very tuple.
            return self.on_module_output(info.address, n_passes, output, entry, len(stack) + 1)
        finally:
            self._open.pop()
            self.stack, self.path = stack, path
            info.n_ops += len(self._ops) - ops_before
