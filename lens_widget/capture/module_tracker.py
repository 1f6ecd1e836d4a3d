"""Which module (and which call of it) is running: the stack of (address, pass) the ops
of a trace are filed under, kept by `ModuleTracker` as module_calls.py tells it of each
module call on the tracing thread.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

import torch
from torch import nn

from lens_widget.capture.class_names import class_label
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_calls import add_tracker, install, remove_tracker, uninstall
from lens_widget.log.records import ModuleInfo

ModuleStack = tuple[tuple[str, int], ...]
_new_object = object.__new__
_module_stack = attrgetter("module_stack")
_address_of = itemgetter(0)  # of a module stack entry (address, pass)


# (address, class, the stack its first call was made under: None for the root's) of each
# module, in the order of their first calls; calls per address; the ops recorded (each
# counted in the calls its module_stack holds)
ModuleCounts = tuple[list[tuple[str, type, "ModuleStack | None"]], dict[str, int], list[Any]]


def ops_per_module(ops: list[Any]) -> Counter[str]:
    """Address -> how many of `ops` ran inside its calls: read from each op's module_stack
    after the pass (one count per (address, pass) its stack holds, in C loops), not counted
    per module call while it runs."""
    return Counter(map(_address_of, chain.from_iterable(map(_module_stack, ops))))


def fill_module_infos(modules: dict[str, ModuleInfo], counts: ModuleCounts) -> None:
    """Put the info of each module called into `modules` (empty), in the order of their
    first calls. A plain trace's log gets them on its first read (build_log.py)."""
    firsts, passes, ops = counts
    n_ops = ops_per_module(ops)
    for address, cls, stack in firsts:
        # without the dataclass's __init__ (its default factories cost more than the
        # fields), every field set by name in the order __init__ sets them
        info = _new_object(ModuleInfo)
        info.address = address
        info.class_name = class_label(cls)  # "lora.Linear" for peft's
        info.parent = None if stack is None else stack[-1][0] if stack else ""
        info.n_passes = passes[address]
        # the root's calls are the whole log: every op, those outside its forward included
        info.n_ops = len(ops) if stack is None else n_ops.get(address, 0)
        info.outputs = {}
        info.output_leaves = {}
        modules[address] = info


def _ignore_output(address: str, pass_index: int, output: Any, first: int | None) -> Any:
    """The output callback once tracing is over."""
    return output


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
        # (address, pass, output, index of the call's first node, None for the root's) ->
        # the output the module's caller gets: `output` unless an intervention replaced it.
        on_module_output: Callable[[str, int, Any, int | None], Any],
        nodes: list[Any],
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
        self._nodes = nodes  # the nodes made so far: those of a call come after its start
        self._ops = ops  # the ops recorded: a module's n_ops is read from their stacks
        # What each module's info is made of, counted as its calls run; the ModuleInfos are
        # made from these once, when `modules` is first read (after the pass): a call then
        # touches one dict, not an object made per module on its first call
        self._passes: dict[str, int] = {}  # address -> calls so far
        self._firsts: list[tuple[str, type, ModuleStack | None]] = []  # see ModuleCounts
        self._modules: dict[str, ModuleInfo] | None = None
        self.stack: ModuleStack = ()
        # The stack without pass numbers: part of the key that folds an op's passes.
        self.path: tuple[str, ...] = ()
        # per open module call: (stack, path) to restore, its address, pass, and the index
        # of the first node made inside it (None for the root's)
        self._open: list[tuple[ModuleStack, tuple[str, ...], str, int, int | None]] = []
        self._entered = False
        # Wrappers whose calls are no module call (DDP around the traced model: its model
        # keeps its own addresses), by id; per open one, how many calls were open under it
        self.see_through: frozenset[int] = frozenset()
        self._through: list[int] = []

    def __enter__(self) -> ModuleTracker:
        install()
        self._entered = True
        add_tracker(self)
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
        remove_tracker(self)
        uninstall()
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
        passes = self._passes
        n_passes = passes.get(address, 0) + 1
        passes[address] = n_passes
        stack = self.stack
        if module is self._root:  # the root is the whole log, not a group inside it
            if n_passes == 1:
                self._firsts.append((address, type(module), None))
            self._open.append((stack, self.path, address, n_passes, None))
            return
        if n_passes == 1:  # its parent, the caller's address, is read from `stack` later
            self._firsts.append((address, type(module), stack))
        path = self.path
        self._open.append((stack, path, address, n_passes, len(self._nodes)))
        self.stack = stack + ((address, n_passes),)  # faster than (*stack, (address, n))
        self.path = path + (address,)

    def passes_of(self, address: str) -> int:
        """How many calls of the module at `address` began so far."""
        return self._passes.get(address, 0)

    @property
    def counts(self) -> ModuleCounts:
        """What the modules' infos are made of (`fill_module_infos`), as counted so far."""
        return self._firsts, self._passes, self._ops

    @property
    def modules(self) -> dict[str, ModuleInfo]:
        """The info of each module called, in the order of their first calls; made on the
        first read (after the pass), its n_passes and n_ops as counted until then."""
        if self._modules is None:
            self._modules = {}
            fill_module_infos(self._modules, self.counts)
        return self._modules

    @modules.setter
    def modules(self, modules: dict[str, ModuleInfo]) -> None:
        self._modules = modules

    def exit(self, output: Any) -> Any:
        """The module call that entered last returned `output` (RAISED when it raised); what
        its caller gets."""
        if self._through and self._through[-1] == len(self._open):
            self._through.pop()  # a see-through wrapper's call
            return output
        if not self._open:
            return output
        stack, path, address, n_passes, first = self._open[-1]
        try:
            return self.on_module_output(address, n_passes, output, first)
        finally:
            self._open.pop()
            self.stack, self.path = stack, path
