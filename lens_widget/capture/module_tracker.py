"""Which module (and which call of it) is running, via global forward hooks.

Global hooks are removed when tracing ends, so no module of the user's keeps anything.
The hooks ignore other threads: only the tracing thread's calls are recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as nn_module

from lens_widget.capture.model_names import ModelNames
from lens_widget.log.records import ModuleInfo

ModuleStack = tuple[tuple[str, int], ...]


def _ignore_output(address: str, pass_index: int, output: Any) -> None:
    """The output callback once tracing is over."""


class ModuleTracker:
    """Maintains the stack of (address, pass) of the modules currently running."""

    def __init__(
        self,
        model: torch.nn.Module,
        names: ModelNames,
        on_module_output: Callable[[str, int, Any], None],
    ) -> None:
        self._root = model
        self._addresses = names.modules
        self._on_module_output = on_module_output
        self._thread = threading.get_ident()
        self._handles: list[Any] = []
        self.modules: dict[str, ModuleInfo] = {}
        self.stack: ModuleStack = ()
        # The stack without pass numbers: part of the key that folds an op's passes.
        self.path: tuple[str, ...] = ()
        self._open: list[tuple[ModuleStack, tuple[str, ...]]] = []

    def __enter__(self) -> ModuleTracker:
        self._handles = [
            nn_module.register_module_forward_pre_hook(self._pre),
            nn_module.register_module_forward_hook(self._post, always_call=True),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        # The callback is a bound method of the recorder, which holds this tracker: drop it,
        # so the log's tensors are freed as soon as the log is, not at the next gc run.
        self._on_module_output = _ignore_output

    def _address(self, module: torch.nn.Module) -> str:
        address = self._addresses.get(id(module))
        if address is None:  # built inside forward, not reachable from the model: name it
            parent = self.stack[-1][0] if self.stack else ""  # under the module calling it
            address = self._addresses[id(module)] = ".".join(
                filter(None, (parent, f"<{type(module).__name__}>"))
            )
        return address

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        address = self._address(module)
        info = self.modules.get(address)
        if info is None:
            parent = self.stack[-1][0] if self.stack else ("" if module is not self._root else None)
            info = self.modules[address] = ModuleInfo(address, type(module).__name__, parent)
        info.n_passes += 1
        self._open.append((self.stack, self.path))
        if module is not self._root:  # the root is the whole log, not a group inside it
            self.stack = (*self.stack, (address, info.n_passes))
            self.path = (*self.path, address)

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if threading.get_ident() != self._thread or not self._open:
            return
        address = self._address(module)
        self._on_module_output(address, self.modules[address].n_passes, output)
        self.stack, self.path = self._open.pop()
