"""`ModelLog.error`, held without keeping the exception (and its traceback) alive.

The exception of a partial trace carries its log (``err.lens_log``) and the log names the
exception (``log.error is err``): held strongly both ways they would form a cycle, and the
log with all its activations would wait for the cyclic garbage collector. So the log holds
the exception weakly. While anyone holds the exception, ``log.error`` is that object; once
it is gone, ``log.error`` is a stand-in of the same class and contents without traceback,
made when the log was built, so a log kept alone still says what went wrong.

Python's built-in exception classes (RuntimeError, ValueError, ...) cannot be referenced
weakly: for those the log keeps the exception's address and a sign of its life instead
(lens_widget.log.error_handle), with the same effect. Only where that cannot be done (an
interpreter other than CPython with the GIL, an exception refusing a new ``__dict__``) is
the exception held itself, and the pair waits for the collector.
"""

from __future__ import annotations

import weakref
from typing import Any

from lens_widget.log.error_handle import handle


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
        try:
            obj.__dict__[self._slot] = (weakref.ref(error), _stand_in(error))
        except TypeError:  # built-in exception classes (RuntimeError...) take no weak reference
            held = handle(error)
            if held is not None:
                obj.__dict__[self._slot] = (held, _stand_in(error))
            else:  # held strongly: the pair is freed by the cyclic collector
                obj.__dict__[self._slot] = (lambda: error, None)
