"""Where in the code an op was called, found by walking the Python stack.

Two answers per op:
- the *call path*: the call sites (code, bytecode offset) from the op up to the nearest
  nn.Module call. It identifies an op for folding passes: a loop or a reused module repeats
  it exactly, while one helper called from two lines (rotate_half(q), rotate_half(k)) gives
  two paths;
- the *source* a person wants to read: the first frame outside torch and lens_widget.

This runs once per op, so a call site is one int, ``id(code) * 2**24 + bytecode offset``:
hashing a code object rehashes its constants, an int hashes for free. Every code object
met is kept alive here, so its id is never reused by another one.
"""

from __future__ import annotations

import inspect
import linecache
import os
from types import CodeType, FrameType

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TORCH_MODULES_DIR = os.path.join(_TORCH_DIR, "nn", "modules") + os.sep
_MODULE_CALL_FILE = os.path.join(_TORCH_MODULES_DIR, "module.py")
_MODULE_CALL_FUNCS = frozenset({"_call_impl", "_wrapped_call_impl", "inner"})
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

# Frame kinds: skipped (torch's functional wrappers, lens_widget), torch's own nn.Module code
# (part of the call path, not user code), user code, and nn.Module.__call__ (the boundary).
SKIP, TORCH_MODULE, USER, MODULE_CALL = 0, 1, 2, 3

# A call site: id(code) * _SITE_SCALE + f_lasti. A call path: one site, or a tuple of them.
CallPath = int | tuple[int, ...]
_SITE_SCALE = 1 << 24


def _classify(code: CodeType) -> int:
    filename = code.co_filename
    if filename.startswith(_OWN_DIR):
        return SKIP
    if filename == _MODULE_CALL_FILE and code.co_name in _MODULE_CALL_FUNCS:
        return MODULE_CALL
    if filename.startswith(_TORCH_DIR):
        return TORCH_MODULE if filename.startswith(_TORCH_MODULES_DIR) else SKIP
    return USER


# id(code) -> kind, kept across traces; _CODES keeps those code objects (and their ids) alive
# and finds a call site's code again after the pass (helper_name).
_KINDS: dict[int, int] = {}
_CODES: dict[int, CodeType] = {}
# site -> (file, line) of user code: a line number is decoded once per call site.
_LINES: dict[int, tuple[str, int]] = {}
# call path -> its helper calls (helper_calls), the same for every trace: made from the kinds,
# so emptied when a kind changes
_HELPERS: dict[CallPath, tuple[tuple[str, int], ...]] = {}


def _learn(code: CodeType) -> int:
    _CODES[id(code)] = code
    kind = _KINDS[id(code)] = _classify(code)
    return kind


def frame_kind(code: CodeType) -> int:
    """SKIP, TORCH_MODULE, USER or MODULE_CALL for a frame running `code` (engine_frames.py)."""
    kind = _KINDS.get(id(code))
    return _learn(code) if kind is None else kind


def mark_module_call(code: CodeType) -> None:
    """`code` runs a module's forward as torch's module calls do (module_tracker.py's
    stand-in): a call path ends at its frames."""
    _CODES[id(code)] = code
    _KINDS[id(code)] = MODULE_CALL
    _HELPERS.clear()  # read the kinds


def mark_wrapper(code: CodeType) -> None:
    """`code` only passes a module's call on to its forward (accelerate's ``new_forward``,
    dispatch_hooks.py): like torch's wrappers, in no call path and no source."""
    _CODES[id(code)] = code
    _KINDS[id(code)] = SKIP
    _HELPERS.clear()  # read the kinds


def find_call_site(
    frame: FrameType | None, outside_path: bool = False, stop: FrameType | None = None
) -> tuple[CallPath, int]:
    """(call path, source site) of an op called from `frame`; source site 0 when the op came
    from no user code. `source_line(site)` turns a source site into (file, line).
    `outside_path`: `frame` is already above the nearest module call (empty call path).
    `stop`: the frame that opened a traced section; an op outside every module call has
    the call path up to that frame (its callers are the same for every op of the section).

    Only ints are kept: holding frames would keep their locals alive.
    """
    kinds = _KINDS
    if frame is not None and not outside_path:
        code = frame.f_code
        kind = kinds.get(id(code))
        # torch's Python wrappers (F.layer_norm, and the override machinery that called the
        # mode) are in no path: the walk below would pass them by, the fast cases start above.
        while kind == SKIP and frame is not stop and frame.f_back is not None:
            frame = frame.f_back
            code = frame.f_code
            kind = kinds.get(id(code))
        back = frame.f_back
        if back is not None and kinds.get(id(back.f_code)) == MODULE_CALL:
            if kind == USER:
                # The common case, an op called in a forward: that line is path and source.
                site = id(code) * _SITE_SCALE + frame.f_lasti
                if site not in _LINES:
                    _LINES[site] = (code.co_filename, frame.f_lineno)
                return site, site
            if kind == TORCH_MODULE:
                # A torch module's own forward (Linear's F.linear): the path is that line,
                # the source the first user frame above.
                return id(code) * _SITE_SCALE + frame.f_lasti, _user_site(back.f_back)
    first = 0
    more: list[int] | None = None
    source = 0
    in_path = not outside_path
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(id(code))
        if kind is None:
            kind = _learn(code)
        if kind == MODULE_CALL:
            if source:
                break
            in_path = False
        elif kind != SKIP:
            # f_lasti tells apart two calls on one line (a + b + c).
            site = id(code) * _SITE_SCALE + frame.f_lasti
            if in_path:
                if not first:
                    first = site
                elif more is None:
                    more = [first, site]
                else:
                    more.append(site)
            if kind == USER and not source:
                source = site
                if site not in _LINES:
                    _LINES[site] = (code.co_filename, frame.f_lineno)
                if not in_path:
                    break
        if frame is stop:
            break
        frame = frame.f_back
    return (first if more is None else tuple(more)), source


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The first frame at or above `frame` that is user code (not torch, not lens_widget)."""
    while frame is not None:
        kind = _KINDS.get(id(frame.f_code))
        if kind is None:
            kind = _learn(frame.f_code)
        if kind == USER:
            return frame
        frame = frame.f_back
    return None


def _user_site(frame: FrameType | None) -> int:
    """The site of the first user frame from `frame` up; 0 when there is none."""
    user = user_frame(frame)
    if user is None:
        return 0
    code = user.f_code
    site = id(code) * _SITE_SCALE + user.f_lasti
    if site not in _LINES:
        _LINES[site] = (code.co_filename, user.f_lineno)
    return site


def source_line(site: int) -> tuple[str, int] | None:
    """(file, line) of a source site from find_call_site; None for 0."""
    return _LINES.get(site) if site else None


def describe_source(where: tuple[str, int] | None) -> tuple[str, str]:
    """("file.py:123", that line's text), or ("", "") when the op came from no user code."""
    if where is None:
        return "", ""
    filename, lineno = where
    return f"{filename}:{lineno}", linecache.getline(filename, lineno).strip()


class SourceTexts:
    """describe_source per source site, each site read from its file once per trace."""

    def __init__(self) -> None:
        self.texts: dict[int, tuple[str, str]] = {0: ("", "")}

    def __call__(self, site: int) -> tuple[str, str]:
        text = self.texts.get(site)
        if text is None:
            text = self.texts[site] = describe_source(source_line(site))
        return text


# A decorator's pass-through frame (`def wrapper(*args, **kwargs)`, `wrapper(self, *a, **k)`):
# not a function of the model's own, neither the forward's body nor a helper it called.
_PASS_THROUGH = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _is_pass_through(code: CodeType) -> bool:
    return code.co_flags & _PASS_THROUGH == _PASS_THROUGH and code.co_argcount <= 1


def helper_calls(path: CallPath) -> tuple[tuple[str, int], ...]:
    """The plain functions of user code that an op with call path `path` ran in, below its
    module's forward (or its traced section), outermost first: (qualified name, e.g.
    ``create_causal_mask`` or ``DynamicCache.update``, the call site that called it); empty
    when the forward itself made the op. Decorators' pass-through frames count as neither
    body nor helper; comprehensions and lambdas are not helpers. Read after the pass, once
    per layer, from the ints kept."""
    if isinstance(path, int):
        return ()
    calls = _HELPERS.get(path)
    if calls is None:
        calls = _HELPERS[path] = _helper_calls(path)
    return calls


def _helper_calls(path: tuple[int, ...]) -> tuple[tuple[str, int], ...]:
    # innermost first, without the wrappers; the last site is in the forward's body
    kept = [
        (site, code)
        for site in path
        if (code := _CODES.get(site // _SITE_SCALE)) is not None and not _is_pass_through(code)
    ]
    calls: list[tuple[str, int]] = []
    caller = kept[-1][0] if kept else 0
    for site, code in reversed(kept[:-1]):
        if _KINDS.get(id(code)) == USER and not code.co_name.startswith("<"):
            calls.append((code.co_qualname.rpartition("<locals>.")[2], caller))
        caller = site
    return tuple(calls)
