"""A handle to an exception that cannot be referenced weakly, without keeping it alive.

Python's built-in exception classes (RuntimeError, ValueError, ...) take no weak references
(nor do ``__slots__`` subclasses without ``__weakref__``). A partial log must still name its
exception (``log.error is err``) without holding it, or the pair ``err.lens_log`` <->
``log.error`` waits for the cyclic garbage collector with all the log's activations. So the
handle keeps the exception's address, never the object, and a sign of its life that CPython
clears in C, before the exception's memory is freed:

- the exception's ``__dict__`` becomes a `LiveDict` (a dict that can be referenced weakly),
  which the exception alone holds. A built-in exception clears its ``__dict__`` in its
  deallocator (BaseException_clear) before its memory is freed; the dict, dying, clears
  its weak references before any Python code runs (the weak reference has no callback).
  In a cycle the collector clears the weak references of unreachable objects first.
- reading the handle checks, from memory it owns or that the checks prove alive: the weak
  reference still points at the dict, the dict has exactly one reference (the exception's:
  a ``vars(err)`` kept elsewhere could outlive the exception, so then the handle gives
  nothing), and the exception's own count is not zero (one whose deallocation began, or was
  deferred by CPython's trashcan, is not taken back). These reads and the final read of
  the object are attribute loads of ctypes views on one line: no call, no backward jump,
  no line event between them, so no other thread runs in between under the GIL.

A shallow copy of the exception (``copy.copy(err)``) gets a plain dict of its own, so it
cannot keep the sign of life going. Replacing ``err.__dict__`` while keeping the old one
defeats the check; nothing else does. Only on CPython with the GIL (little-endian, the
object layout checked at import); elsewhere `handle` returns None and the caller holds
the exception itself.
"""

from __future__ import annotations

import ctypes
import sys
import sysconfig
import weakref


class LiveDict(dict):  # type: ignore[type-arg]
    """The ``__dict__`` of an exception a partial log names: a dict, weakly referenceable.

    Copied, deep-copied or pickled, it is a plain dict (nothing of lens_widget is needed to
    load a pickled exception's attributes)."""

    __slots__ = ("__weakref__",)

    def __reduce__(self) -> tuple[type[dict], tuple[dict]]:  # type: ignore[type-arg]
        return dict, (dict(self),)


_WEAK_TARGET = object.__basicsize__  # PyWeakReference.wr_object, right after the header


class ErrorHandle:
    """Calling it gives the exception while it lives, else None (as a weak reference does)."""

    __slots__ = (
        "_cell",
        "_dict_address",
        "_dict_refs",
        "_error",
        "_error_refs",
        "_target",
        "_weak",
    )

    def __init__(self, error: BaseException, live: LiveDict) -> None:
        self._weak = weakref.ref(live)  # no callback: clearing it runs no Python code
        self._dict_address = id(live)
        self._target = ctypes.c_void_p.from_address(id(self._weak) + _WEAK_TARGET)
        # The low 32 bits of ob_refcnt (all of it on 3.14): read only while the checks
        # before it prove the object's memory alive.
        self._dict_refs = ctypes.c_uint32.from_address(id(live))
        self._error_refs = ctypes.c_uint32.from_address(id(error))
        self._cell = ctypes.c_void_p(id(error))
        self._error = ctypes.py_object.from_address(ctypes.addressof(self._cell))

    def __call__(self) -> BaseException | None:
        # One line on purpose: see the module docstring.
        return self._error.value if self._target.value == self._dict_address and self._dict_refs.value == 1 and self._error_refs.value else None  # noqa: E501  # fmt: skip


def handle(error: BaseException) -> ErrorHandle | None:
    """An `ErrorHandle` to `error`, whose ``__dict__`` becomes a `LiveDict`; None where this
    cannot be done (another interpreter, or an exception refusing a new ``__dict__``)."""
    if not _SUPPORTED:
        return None
    live = vars(error)
    if type(live) is not LiveDict:  # a second log naming the same exception shares it
        live = LiveDict(live)
        try:
            error.__dict__ = live
        except Exception:  # noqa: BLE001 - a class refusing attributes comes back untouched
            return None
        if vars(error) is not live:
            return None
    return ErrorHandle(error, live)


def _layout_holds() -> bool:
    """Whether the views read what they should on this interpreter."""
    probe = RuntimeError("probe")
    live = LiveDict()
    probe.__dict__ = live
    held = ErrorHandle(probe, live)
    del live
    refs = held._error_refs.value
    extra = [probe]
    if held() is not probe or not 0 < refs < held._error_refs.value or len(extra) != 1:
        return False
    del extra
    kept = vars(probe)
    refused = held() is None  # a dict kept elsewhere: the handle gives nothing
    del kept
    if not refused or held() is not probe:
        return False
    del probe
    return held() is None


_SUPPORTED = (
    sys.implementation.name == "cpython"
    and not sysconfig.get_config_var("Py_GIL_DISABLED")
    and sys.byteorder == "little"
    and _layout_holds()
)
