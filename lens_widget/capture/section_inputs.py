"""Names of the tensors a traced section (`lw.tracing`) gets from code that ran before it.

A tensor the section did not make and that is no parameter or buffer of its modules
becomes an "input" source where the section first uses it:
- passed to an outermost call of a given module: named as ``lw.trace`` names inputs, under
  that module's name (``input.0``, ``input.attention_mask`` for the one positional model;
  ``input.gen.0`` for ``gen=G``);
- passed to a module that was not given, or used by the section's own code: named after
  the variable holding it in the user code that uses it (``input.labels``), else after the
  op that first uses it (``input.cross_entropy``).
Tensors first used inside a module call stay ``const`` sources, as in ``lw.trace``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import torch

from lens_widget.capture.call_site import find_call_site, user_frame
from lens_widget.capture.func_facts import FACTS
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.named_leaves import named_arguments
from lens_widget.capture.tensor_book import TensorBook

Tensor = torch.Tensor


def _variable_holding(frame: FrameType | None, tensor: Tensor) -> str | None:
    """The first public name in `frame`'s locals bound to this very tensor object."""
    if frame is None:
        return None
    for name, value in frame.f_locals.items():
        if value is tensor and not name.startswith("_") and name.isidentifier():
            return name
    return None


class SectionInputs:
    """Registers a section's inputs with its recorder's tensor book as they show up."""

    def __init__(self, book: TensorBook, names: ModelNames) -> None:
        self._book = book
        self._given = set(names.modules.values())

    def on_outer_call(
        self, module: torch.nn.Module, address: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Before an outermost module call runs: its tensor arguments from outside are inputs."""
        # Runs at the user's level, where the recorder is active: nothing here is recorded.
        with torch._C.DisableTorchFunction():
            book = self._book
            frame = sys._getframe(1)
            found = [(n, t) for n, t in named_arguments(args, kwargs) if not book.knows(t)]
            if not found:
                return
            caller = user_frame(frame)
            _, site = find_call_site(frame, True)
            given = address in self._given
            for name, tensor in found:
                if book.knows(tensor):  # passed twice: one input
                    continue
                if given:
                    label = name if address == "" else f"input.{address}{name[len('input') :]}"
                else:
                    variable = _variable_holding(caller, tensor)
                    label = (
                        f"input.{variable}"
                        if variable is not None
                        else f"input.{type(module).__name__}{name[len('input') :]}"
                    )
                book.add_source(tensor, "input", label, site)

    def free_input(self, tensor: Tensor, func: Callable[..., Any]) -> tuple[str, int]:
        """(name, source site) of a tensor from outside that the section's own code uses."""
        frame = sys._getframe(1)
        _, site = find_call_site(frame, True)
        variable = _variable_holding(user_frame(frame), tensor)
        if variable is None:
            variable = FACTS[func].clean
        return f"input.{variable}", site
