"""The recorder of a timed or intervened trace: `trace(..., timing=True, intervene={...})`.

A subclass, so a plain trace pays nothing for either: here every call takes the careful
path (bookkeeping with torch functions disabled), the torch call alone is timed, and an
intervened op's or module's output is replaced before anything downstream sees it.

An intervention function runs with torch functions disabled: its own calls are not
recorded (labels downstream stay those of the clean run, so ``lw.compare`` matches them)
and a user's mode around the trace does not see them.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from time import perf_counter
from typing import Any

import torch

from lens_widget.capture.func_facts import FACTS, FuncFacts
from lens_widget.capture.interventions import (
    Interventions,
    apply_intervention,
    replace_tensor,
)
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.module_tracker import RAISED
from lens_widget.capture.recorder import Recorder
from lens_widget.capture.save_policy import SavePolicy
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves

Tensor = torch.Tensor


class InstrumentedRecorder(Recorder):
    """Records like Recorder; times each torch call and applies interventions."""

    def __init__(
        self,
        names: ModelNames,
        root: torch.nn.Module | None,
        save: SavePolicy,
        track_versions: bool,
        timing: bool,
        interventions: Interventions | None,
        section: bool = False,
    ) -> None:
        super().__init__(names, root, save, track_versions, section)
        self.timing = timing
        self.interventions = interventions
        self._in_call = False  # _note_outputs runs for the result of a torch call
        self._swapped: tuple[Tensor, Tensor] | None = None  # (output, its replacement)
        self._elapsed_ms = 0.0  # of the last timed torch call

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        facts = FACTS[func]
        if facts.metadata:
            return func(*args, **kwargs) if kwargs else func(*args)
        return self._call_quietly(facts, func, args, kwargs, sys._getframe(1))

    def _call(
        self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Any:
        if not self.timing:
            return func(*args, **kwargs) if kwargs else func(*args)
        # CUDA runs asynchronously: wait for earlier work, then for this op's.
        sync = torch.cuda.is_initialized()
        if sync:
            torch.cuda.synchronize()
        start = perf_counter()
        out = func(*args, **kwargs) if kwargs else func(*args)
        if sync:
            torch.cuda.synchronize()
        self._elapsed_ms = (perf_counter() - start) * 1000.0
        return out

    def _record_result(
        self,
        facts: FuncFacts,
        inputs: Any,
        writes: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        out: Any,
        frame: Any,
    ) -> Any:
        n_ops = len(self.ops)
        self._in_call = True
        try:
            out = super()._record_result(facts, inputs, writes, args, kwargs, out, frame)
        finally:
            self._in_call = False
        swapped = self._swapped
        if swapped is not None:
            self._swapped = None
            out = replace_tensor(out, swapped[0], swapped[1], self.ops[-1].label)
        if self.timing and len(self.ops) > n_ops:
            self.ops[-1].time_ms = self._elapsed_ms
        return out

    def _note_outputs(
        self, node: OpRecord, outputs: tuple[Tensor, ...], base: str, passes: int
    ) -> None:
        interventions = self.interventions
        if interventions is not None and self._in_call:
            found = interventions.for_op(base, passes)
            if found is not None:
                outputs = self._intervene_op(node, found, outputs, f"op {base}:{passes}")
        super()._note_outputs(node, outputs, base, passes)

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

    def _on_module_output(
        self, address: str, pass_index: int, output: Any, entry: tuple[str, int] | None
    ) -> Any:
        output = super()._on_module_output(address, pass_index, output, entry)
        interventions = self.interventions
        if interventions is None or output is RAISED:
            return output
        found = interventions.for_module(address, pass_index)
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
        produced = self.producer_of(first)
        if produced is None:
            raise TypeError(
                f"lens_widget: intervene[{found[0]!r}]: no recorded op produced the output of "
                f"{where}"
            )
        node, index = produced
        new = apply_intervention(found[0], found[1], first, where)
        replaced = replace_tensor(output, first, new, where)
        node.intervened = True
        version = -1 if self.keeps_nothing else self._version(new)
        self._producers[id(new)] = (weakref.ref(new), node, index, version)
        saved = node.activations
        if saved is not None:
            outputs = (*saved[:index], new, *saved[index + 1 :])
            versions: Any = (
                version if len(outputs) == 1 else tuple(self._version(t) for t in outputs)
            )
            self.values.keep(node, outputs, versions)
        return replaced
