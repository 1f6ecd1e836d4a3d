"""Interventions while tracing: ``trace(..., intervene={...})``, a Feature (features.py) of
the recorder. An intervened op's or module's output is replaced before anything downstream
sees it; which targets match is interventions.py's.

Every call takes the careful path (bookkeeping with torch functions disabled). An
intervention function runs with torch functions disabled: its own calls are not recorded
(labels downstream stay those of the clean run, so ``lw.compare`` matches them) and a
user's mode around the trace does not see them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, cast

import torch

from lens_widget.capture.features import Feature
from lens_widget.capture.interventions.interventions import (
    Interventions,
    apply_intervention,
    replace_tensor,
)
from lens_widget.capture.nested_values import nested_intervention_error
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves

Tensor = torch.Tensor


class Intervening(Feature):
    """Replaces the outputs of the ops and module calls that `interventions` targets."""

    careful = True

    def __init__(self, interventions: Interventions, book: TensorBook) -> None:
        self.interventions = interventions
        # Weak: the recorder's book may hold a feature's hooks (features.py)
        self._book = cast("TensorBook", weakref.proxy(book))
        self._swapped: tuple[Tensor, Tensor] | None = None  # (output, its replacement)

    # ---- ops -------------------------------------------------------------------------

    def replace_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> tuple[Tensor, ...]:
        found = self.interventions.for_op(base, passes)
        if found is None:
            return outputs
        return self._intervene_op(node, found, outputs, f"op {base}:{passes}")

    def result(self, node: OpRecord | None, out: Any) -> Any:
        swapped = self._swapped
        if swapped is not None and node is not None:
            self._swapped = None
            out = replace_tensor(out, swapped[0], swapped[1], node.label)
        return out

    def _intervene_op(
        self,
        node: OpRecord,
        found: tuple[str, Callable[[Tensor], Tensor]],
        outputs: tuple[Tensor, ...],
        where: str,
    ) -> tuple[Tensor, ...]:
        """The op's outputs with the first replaced by fn(first). An op that wrote its
        result into a tensor (relu_, out=, x[i] = v) gets fn's value written there too."""
        first = outputs[0]
        new = apply_intervention(found[0], found[1], first, where)
        node.intervened = True
        if node.inplace:
            first.copy_(new)
            return outputs
        self._swapped = (first, new)
        return (new, *outputs[1:])

    # ---- modules ---------------------------------------------------------------------

    def module_output(self, address: str, pass_index: int, output: Any) -> Any:
        found = self.interventions.for_module(address, pass_index)
        if found is None:
            return output
        with torch._C.DisableTorchFunction():
            return self._intervene_module(found, output, f"module {address}:{pass_index}")

    def _intervene_module(
        self, found: tuple[str, Callable[[Tensor], Tensor]], output: Any, where: str
    ) -> Any:
        """The module's output with its first tensor replaced by fn(that tensor); the op
        that produced it is marked, and its saved value becomes the replacement."""
        leaves = tensor_leaves(output)
        if not leaves:
            raise TypeError(
                f"lens_widget: intervene[{found[0]!r}]: {where} returned "
                f"{type(output).__name__} with no tensor to replace"
            )
        first = leaves[0]
        if first.is_nested:
            raise nested_intervention_error(found[0], where)
        book = self._book
        produced = book.producer_of(first)
        if produced is None:
            raise TypeError(
                f"lens_widget: intervene[{found[0]!r}]: no recorded op produced the output of "
                f"{where}"
            )
        node, index = produced
        new = apply_intervention(found[0], found[1], first, where)
        replaced = replace_tensor(output, first, new, where)
        node.intervened = True
        book.replace_output(node, index, new)
        return replaced
