"""Which distributed engine, if any, made a torch call: read from the Python stack.

A call is the engine's own bookkeeping when, walking up from the line that made it, a frame
of an engine's code (FSDP, DDP, DTensor) comes before any user line or module call: FSDP's
hooks run inside the module call they prepare, DTensor's input and output hooks too, and
DDP's forward calls the model as a module call, so the model's own calls never have an
engine frame below their user line. torch's other code (functional wrappers, autograd, the
c10d API) and lens_widget's own frames are passed through. No name list of engine
functions: the engine is whatever runs from its files.
"""

from __future__ import annotations

import os
from types import CodeType, FrameType

import torch

from lens_widget.capture.call_site import MODULE_CALL, USER, frame_kind
from lens_widget.log.distributed import StepPhase

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_DIST_DIR = os.path.join(_TORCH_DIR, "distributed") + os.sep
# (engine, the folder of its code), the most specific first
_ENGINE_DIRS = (
    ("fsdp", os.path.join(_DIST_DIR, "fsdp") + os.sep),
    ("ddp", os.path.join(_DIST_DIR, "_composable", "replicate")),  # composable DDP
    ("fsdp", os.path.join(_DIST_DIR, "_composable") + os.sep),
    ("dtensor", os.path.join(_DIST_DIR, "tensor") + os.sep),
    ("ddp", os.path.join(_TORCH_DIR, "nn", "parallel") + os.sep),
    ("ddp", os.path.join(_DIST_DIR, "algorithms") + os.sep),
)
# An optimizer's code, and gradient clipping before its step
_OPTIMIZER_CODE = (
    os.path.join(_TORCH_DIR, "optim") + os.sep,
    os.path.join(_TORCH_DIR, "nn", "utils", "clip_grad.py"),
)
STOP = "|"  # a user line or a module call: the call is not the engine's
_PASS = ""  # torch's other code, lens_widget: look further up

# id(code) -> engine name, STOP or _PASS; _CODES keeps those code objects (and ids) alive
_ENGINES: dict[int, str] = {}
_CODES: list[CodeType] = []


def _classify(code: CodeType) -> str:
    filename = code.co_filename
    for engine, folder in _ENGINE_DIRS:
        if filename.startswith(folder):
            return engine
    kind = frame_kind(code)
    return STOP if kind in (USER, MODULE_CALL) else _PASS


def engine_of(frame: FrameType | None, stop: FrameType | None = None) -> str:
    """The engine whose code made the call from `frame` ("fsdp", "ddp", "dtensor"), or ""
    when the call is the model's or the user's. `stop`: a traced section's opening frame."""
    engines = _ENGINES
    while frame is not None:
        code = frame.f_code
        engine = engines.get(id(code))
        if engine is None:
            _CODES.append(code)
            engine = engines[id(code)] = _classify(code)
        if engine:
            return "" if engine == STOP else engine
        if frame is stop:
            return ""
        frame = frame.f_back
    return ""


def step_phase(frame: FrameType | None) -> StepPhase:
    """When in a training step the call runs: inside the autograd engine ("backward"), in an
    optimizer's code or gradient clipping ("optimizer"), else "forward"."""
    if torch._C._current_graph_task_id() != -1:
        return "backward"
    while frame is not None:
        if frame.f_code.co_filename.startswith(_OPTIMIZER_CODE):
            return "optimizer"
        frame = frame.f_back
    return "forward"
