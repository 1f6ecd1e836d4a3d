"""`with lw.tracing(model) as t: ...`: record any section of code, not only one forward."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import torch

from lens_widget.capture.build_log import SectionTop
from lens_widget.capture.distributed.distributed_capture import unwrap_data_parallel
from lens_widget.capture.features import Feature
from lens_widget.capture.interventions.interventions import InterventionFn
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.offload.offload import offload_spec
from lens_widget.capture.partial_log import attach_partial_log
from lens_widget.capture.save_policy import SavePolicy, SaveSpec
from lens_widget.capture.session import Session
from lens_widget.log.model_log import ModelLog

SECTION = "section"  # the model_class prefix of a section's log


def _eager(module: Any, name: str) -> torch.nn.Module:
    if not isinstance(module, torch.nn.Module):
        raise TypeError(
            f"lens_widget.tracing: {name} must be a torch.nn.Module, got {type(module).__name__}"
        )
    original = getattr(module, "_orig_mod", None)  # torch.compile'd: name the eager module
    module = original if isinstance(original, torch.nn.Module) else module
    return unwrap_data_parallel(module)[0]  # DDP: its model, under its own addresses


def _named_roots(
    modules: tuple[Any, ...], named: Mapping[str, Any]
) -> tuple[torch.nn.Module | dict[str, torch.nn.Module], str]:
    """What ModelNames walks (one model, or modules by name) and the log's model_class."""
    if len(modules) == 1 and not named:
        model = _eager(modules[0], "the module")
        return model, f"{SECTION}: {type(model).__name__}"
    roots: dict[str, torch.nn.Module] = {}
    for name, module in named.items():
        if not name.isidentifier():
            raise ValueError(f"lens_widget.tracing: module name {name!r} is not an identifier")
        roots[name] = _eager(module, name)
    for i, module in enumerate(modules):
        module = _eager(module, f"module {i}")
        base = name = type(module).__name__.lower()
        n = 1
        while name in roots:  # a second Linear is "linear_2"
            n += 1
            name = f"{base}_{n}"
        roots[name] = module
    seen: dict[int, str] = {}
    for name, module in roots.items():
        if id(module) in seen:
            raise ValueError(
                f"lens_widget.tracing: the same module is given twice ({seen[id(module)]}, {name})"
            )
        seen[id(module)] = name
    if not roots:
        return roots, SECTION
    return roots, f"{SECTION}: " + ", ".join(f"{n}={type(m).__name__}" for n, m in roots.items())


class Tracing:
    """A context manager recording one ``with`` block; its log is ``.log`` afterwards."""

    def __init__(
        self,
        modules: tuple[Any, ...],
        named_modules: Mapping[str, Any],
        *,
        save: SaveSpec,
        grads: bool,
        timing: bool,
        intervene: Mapping[str, InterventionFn] | None,
        offload: str | os.PathLike[str] | None = None,
        memory_budget: int | str | None = None,
        features: Sequence[Feature] = (),
        copy_sources: bool = True,
    ) -> None:
        """`features`: attached to the recorder after lens_widget's own (features.py).
        `copy_sources`: False leaves the values of parameters, buffers and constants
        uncopied before a write, dropped if written (SavedValues.copy_sources)."""
        self._roots, self.model_class = _named_roots(modules, named_modules)
        SavePolicy(save)  # a bad spec raises here, at the call, not at the with statement
        spec = offload_spec(offload, memory_budget)  # so does a bad offload
        self._options = {
            "save": save, "timing": timing, "intervene": intervene, "offload": spec,
            "features": features, "copy_sources": copy_sources,
        }  # fmt: skip
        self.grads = grads
        # DDP wrappers of the given modules: their calls are no module call (see _eager)
        given = (*modules, *named_modules.values())
        self._wrappers = [w for m in given if (w := unwrap_data_parallel(m)[1]) is not None]
        self._session: Session | None = None
        self._state = "new"  # -> "recording" -> "done"
        self._log: ModelLog | None = None

    def __enter__(self) -> Tracing:
        if self._state != "new":
            raise RuntimeError(
                "lens_widget.tracing: this tracing object already recorded a block "
                f"({'it is still running' if self._state == 'recording' else 'its log is .log'}"
                "); start a new one with lw.tracing(...)"
            )
        roots = self._roots
        root = roots if isinstance(roots, torch.nn.Module) else None
        top = SectionTop(type(root).__name__ if root is not None else SECTION)
        session = Session(
            ModelNames(roots), root, self.model_class,
            section=top, grads=self.grads, wrappers=self._wrappers, **self._options,
        )  # fmt: skip
        self._state = "recording"
        # The frame running the with block: its ops' call paths end there.
        session.start(top_frame=sys._getframe(1))
        self._session = session
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        session = self._session
        if session is None:
            return False
        self._session = None
        try:
            session.finish(None, error, stacklevel=2)
        finally:
            # Also when finish raised for an intervention target that matched nothing.
            self._log = getattr(session, "log", None)
            self._state = "done"
        if error is not None and self._log is not None:
            attach_partial_log(error, self._log)
        return False  # the block's exception goes on, the same object

    @property
    def log(self) -> ModelLog:
        """The ModelLog of the block; a partial log when the block raised."""
        if self._state != "done" or self._log is None:
            where = "inside the with block" if self._state == "recording" else "before the block"
            raise RuntimeError(
                f"lens_widget.tracing: the log is built when the with block ends; t.log was "
                f"read {where}"
            )
        return self._log


def tracing(
    *modules: torch.nn.Module,
    save: SaveSpec = "all",
    grads: bool = False,
    timing: bool = False,
    intervene: Mapping[str, InterventionFn] | None = None,
    offload: str | os.PathLike[str] | None = None,
    memory_budget: int | str | None = None,
    **named_modules: torch.nn.Module,
) -> Tracing:
    """Record every torch call this thread makes inside a ``with`` block.

    ::

        with lw.tracing(model) as t:
            out = model(ids, labels=ids)
            loss = out.loss * 2 + reg(model)
        log = t.log

    Calls of the given modules are nested by module address; code outside any module call
    (a loss, a regulariser, preprocessing) is recorded at the top level (module ""). One
    module given positionally keeps the addresses ``lw.trace`` gives it
    (``log["transformer.h.3.mlp"]``, params ``transformer.wte.weight``); modules given by
    keyword are named by it (``lw.tracing(gen=G, disc=D)``: ``gen.layer1``,
    ``disc.fc.weight``); several positional ones are named by their class, lower-cased
    (``linear``, ``linear_2``). ``lw.tracing()`` records plain code. A module not given but
    called in the block is a module named ``<ClassName>`` under the module calling it (at
    the top level: ``<CrossEntropyLoss>``); its parameters are ``const`` sources.

    Tensors made before the block become sources where the block first uses them:
    parameters and buffers of the given modules by address; tensors passed to a given
    module's outermost call as ``lw.trace`` names inputs, under the module's name
    (``input.0``, ``input.attention_mask``; ``input.gen.0``); any other as
    ``input.<variable>``, the variable holding it in the line that uses it, else
    ``input.<op>``, the op that first used it. Tensors first used inside a module call (a
    tensor attribute that is no buffer) are ``const`` sources, as in ``lw.trace``.

    ``save``, ``timing``, ``intervene``, ``offload`` and ``memory_budget`` work as in
    ``lw.trace`` (module targets by the addresses above). ``grads`` asks for the gradients
    of a backward run in the block.
    ``t.log`` is a ModelLog after the block (``model_class`` "section: GPT2LMHeadModel");
    it has no output sinks (``log.output`` is None). If the block raises, the same
    exception propagates with the partial log at ``err.lens_log`` (and
    ``lw.partial_log(err)``, ``t.log``). The world comes out as a plain run of the block
    leaves it. A tracing object records one block; entering it again raises RuntimeError.
    """
    return Tracing(
        modules, named_modules, save=save, grads=grads, timing=timing, intervene=intervene,
        offload=offload, memory_budget=memory_budget,
    )  # fmt: skip
