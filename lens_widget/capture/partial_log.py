"""Where the partial log of a forward pass that raised can be found.

The exception is raised unchanged. Its partial log is set as ``err.lens_log`` (with a note
saying so) where the exception takes new attributes; `partial_log(err)` finds it also for
exceptions that refuse them (a frozen dataclass, a class that forbids setattr). Nothing
here keeps the exception alive: the log is freed with it, without waiting for the cyclic
garbage collector (the log does not hold its error, see lens_widget.log.held_error).
"""

from __future__ import annotations

import contextlib
import weakref
from collections import deque
from typing import Any

from lens_widget.log.model_log import ModelLog

# id(exception) -> (weak reference to it, its partial log), for exceptions that refuse
# attributes; an entry goes when its exception is freed.
_REFUSED: dict[int, tuple[weakref.ref[BaseException], ModelLog]] = {}
# The same for the few that also cannot be referenced weakly (a __slots__ class without
# __weakref__): held strongly, only the most recent ones.
_RECENT_UNREFERENCEABLE: deque[tuple[BaseException, ModelLog]] = deque(maxlen=4)


def attach_partial_log(error: BaseException, log: ModelLog) -> None:
    try:
        error.lens_log = log  # pyright: ignore[reportAttributeAccessIssue]  # the documented lens_log attribute on the user's exception
    except Exception:  # noqa: BLE001 - any refusal: a frozen dataclass, a custom __setattr__
        _remember(error, log)
        return
    # add_note sets __notes__, which such a class may refuse too (and Python 3.10 has none)
    with contextlib.suppress(Exception):
        error.add_note(
            # not "the forward pass": a section or a training step also raises in backward
            f"lens_widget: raised after {len(log.ops)} recorded ops; "
            "the partial log is at err.lens_log"
        )


def _remember(error: BaseException, log: ModelLog) -> None:
    key = id(error)

    def forget(_: Any, key: int = key) -> None:
        _REFUSED.pop(key, None)

    try:
        _REFUSED[key] = (weakref.ref(error, forget), log)
    except TypeError:  # not weakly referenceable
        _RECENT_UNREFERENCEABLE.append((error, log))


def partial_log(error: BaseException) -> ModelLog | None:
    """The partial log of a `lens_widget.trace` call that raised `error`, or None.

    Same as ``error.lens_log`` where the exception takes attributes; also works for
    exceptions that refuse them (frozen dataclasses, __setattr__ overrides). For the rare
    exception class that also cannot be referenced weakly (``__slots__`` without
    ``__weakref__``), only the logs of the last four such failures are kept.
    """
    log = getattr(error, "lens_log", None)
    if isinstance(log, ModelLog):
        return log
    entry = _REFUSED.get(id(error))
    if entry is not None and entry[0]() is error:
        return entry[1]
    return next((log for held, log in _RECENT_UNREFERENCEABLE if held is error), None)
