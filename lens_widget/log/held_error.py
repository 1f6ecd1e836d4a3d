"""`ModelLog.error`, held without keeping the exception (and its traceback) alive.

The exception of a partial trace carries its log (``err.lens_log``). Were the log to hold the
exception strongly, the pair would form a cycle, and the log with all its activations would
wait for the cyclic garbage collector. So the log never holds the exception itself:

- an exception that can be referenced weakly (most user-defined classes) is held weakly:
  while anyone holds it, ``log.error`` is that object;
- Python's built-in exception classes (RuntimeError, ValueError, ...) and ``__slots__``
  classes without ``__weakref__`` take no weak reference, and Python offers no supported way
  to name an object without holding it otherwise: for those ``log.error`` is a copy from the
  start (``log.error is not err``).

Either way, once the exception is gone ``log.error`` is a copy of it made when the log was
built: the same class, arguments, message and attributes, without traceback, chain or
partial log, so a log kept alone still says what went wrong and keeps no frame alive.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import Any


def _copied(error: BaseException) -> BaseException:
    """A new object of `error`'s class with its arguments and attributes."""
    cls = type(error)
    if cls.__module__ == "builtins":
        # The class's own reduce reruns its C __init__, which sets the fields its __new__
        # leaves empty (StopIteration.value, OSError.filename, SyntaxError.lineno); no user
        # code runs.
        twin = copy.copy(error)
    else:  # no user __init__ runs: it might have side effects, or take other arguments
        twin = cls.__new__(cls, *error.args)
        twin.__dict__.update(vars(error))
    for klass in cls.__mro__:
        for name in getattr(klass, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(error, name):
                object.__setattr__(twin, name, getattr(error, name))
    return twin


def _stand_in(error: BaseException) -> BaseException:
    """A copy of `error` without traceback, chain or partial log (or a RuntimeError saying
    what it was, for exceptions that cannot be copied)."""
    cls = type(error)
    try:
        twin = _copied(error)
        attributes = vars(twin)
        attributes.pop("lens_log", None)
        if isinstance(attributes.get("__notes__"), list):  # not shared: the note added later
            attributes["__notes__"] = list(attributes["__notes__"])
        str(twin)  # its message must render as the original's does
        return twin
    except Exception:  # noqa: BLE001 - any exception class may refuse to be copied
        return RuntimeError(f"{cls.__name__}: {error}")


def _gone() -> None:
    return None


class HeldError:
    """A dataclass field (no default) naming an exception without holding it."""

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
        original: Callable[[], BaseException | None]
        try:
            original = weakref.ref(error)
        except TypeError:  # a built-in exception class (RuntimeError...): the copy alone
            original = _gone
        obj.__dict__[self._slot] = (original, _stand_in(error))
