"""Parameters made while a trace runs read as the tensor they were made from.

``nn.Parameter(t)`` wraps `t`'s memory in a new tensor object through
``torch.Tensor._make_subclass``, which no TorchFunctionMode sees: a module built inside a
traced forward or a section (``nn.Linear(3, 2)``: ``Parameter(torch.empty(...))``, then
``kaiming_uniform_``) would have parameters of unknown origin, recorded as sources named after
their first use. While a trace runs, ``nn.Parameter.__new__`` is a stand-in that tells the
tracing thread's recorders which tensor each new parameter wraps; it shares that tensor's
memory and version counter, so it reads as the same node. The original is put back when the
last trace ends; other threads' parameters are not reported.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

import torch
from torch import nn


class AliasBook(Protocol):
    """What the stand-in tells: `tensor` is `of` under another Python object (tensor_book)."""

    def alias(self, tensor: torch.Tensor, of: torch.Tensor) -> None: ...


class _ThreadBooks(threading.local):
    books: tuple[AliasBook, ...] = ()


_THREAD = _ThreadBooks()
_PATCH_LOCK = threading.Lock()


class _PatchState:
    """nn.Parameter.__new__ as it was before the first active trace (the staticmethod
    object itself: an instance attribute, which no descriptor unwraps), and how many traces
    are active."""

    def __init__(self) -> None:
        self.original: Any = None
        self.active = 0


_Patch = _PatchState()


def _watched_new(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
    param = _Patch.original(cls, data, requires_grad)
    books = _THREAD.books
    if books and isinstance(data, torch.Tensor):
        with torch._C.DisableTorchFunction():  # bookkeeping: invisible to user modes
            for book in books:
                book.alias(param, data)
    return param


_STAND_IN = staticmethod(_watched_new)


class ParameterWatch:
    """While entered, parameters this thread makes are reported to `book`."""

    def __init__(self, book: AliasBook) -> None:
        self._book = book
        self._entered = False

    def __enter__(self) -> ParameterWatch:
        with _PATCH_LOCK:
            if _Patch.active == 0:
                _Patch.original = nn.Parameter.__dict__["__new__"]
                nn.Parameter.__new__ = _STAND_IN
            _Patch.active += 1
        self._entered = True
        _THREAD.books = (*_THREAD.books, self._book)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._entered:
            return
        self._entered = False
        _THREAD.books = tuple(b for b in _THREAD.books if b is not self._book)
        with _PATCH_LOCK:
            _Patch.active -= 1
            if _Patch.active == 0:
                if nn.Parameter.__dict__["__new__"] is _STAND_IN:
                    nn.Parameter.__new__ = _Patch.original
                _Patch.original = None
