"""`ModelLog.error`, held without keeping the exception (and its traceback) alive.

The exception of a partial trace carries its log (``err.lens_log``). Were the log to hold the
exception strongly, the pair would form a cycle, and the log with all its activations would
wait for the cyclic garbage collector after the user dropped the exception. So the log holds
the exception weakly, with a stand-in of the same class and contents without traceback, made
when the log was built: while anyone holds the exception, ``log.error`` is that object; once it
is gone, ``log.error`` is the stand-in, so a log kept alone still says what went wrong.

Python's built-in exception classes (RuntimeError, ValueError, ...) take no weak reference,
and Python offers no supported way to hand back an object it does not reference. For those,
``log.error`` is always the stand-in (``type``, ``args``, attributes and message as the
original's; ``log.error is err`` does not hold), and dropping the exception still frees the
log at once. Exception classes defined in Python take weak references unless they declare
``__slots__`` without ``__weakref__``: for them ``log.error is err`` while ``err`` lives.
"""

from __future__ import annotations

import weakref
from typing import Any


def _stand_in(error: BaseException) -> BaseException:
    """A copy of `error` without traceback, chain or partial log (or a RuntimeError saying
    what it was, for exceptions that cannot be copied)."""
    cls = type(error)
    try:
        copy = cls.__new__(cls, *error.args)
        copy.__dict__.update({k: v for k, v in vars(error).items() if k != "lens_log"})
        for klass in cls.__mro__:
            for name in getattr(klass, "__slots__", ()):
                if name not in ("__dict__", "__weakref__") and hasattr(error, name):
                    object.__setattr__(copy, name, getattr(error, name))
        str(copy)  # its message must render as the original's does
        return copy
    except Exception:  # noqa: BLE001 - any exception class may refuse to be copied
        return RuntimeError(f"{cls.__name__}: {error}")


class HeldError:
    """A dataclass field (no default) holding an exception weakly, with a stand-in."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_held"

    def __get__(self, obj: Any, owner: type | None = None) -> BaseException | None:
        if obj is None:  # on the class: no default value for the dataclass field
            raise AttributeError(self._slot)
        held = obj.__dict__.get(self._slot)
        if held is None:
            return None
        original = held[0]()
        return original if original is not None else held[1]

    def __set__(self, obj: Any, error: BaseException | None) -> None:
        if error is None:
            obj.__dict__[self._slot] = None
            return
        stand_in = _stand_in(error)
        try:
            obj.__dict__[self._slot] = (weakref.ref(error), stand_in)
        except TypeError:  # built-in exception classes (RuntimeError...) take no weak reference
            obj.__dict__[self._slot] = (_gone, stand_in)


def _gone() -> None:
    """The weak reference of an exception that takes none: the stand-in is all the log has."""
    return None
