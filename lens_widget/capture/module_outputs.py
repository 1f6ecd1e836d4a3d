"""What each module call returned: the nodes that produced its outputs. A tensor a module
returns untouched gets an "identity" op inside the module, so the module is a node of the
graph. The recorder's member `module_outputs`; the module tracker calls `on_output` as each
module call returns.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch

from lens_widget.capture.func_facts import IDENTITY_FACTS, FuncFacts, identity
from lens_widget.capture.input_resolution import Inputs
from lens_widget.capture.labels_on_read import ModuleCall
from lens_widget.capture.module_calls import RAISED
from lens_widget.capture.output_paths import named_output_leaves
from lens_widget.capture.tensor_book import TensorBook
from lens_widget.log.records import OpRecord, OutputLeaf

Tensor = torch.Tensor
# What a feature may do with a module call's output: (address, pass, output) -> the output
# the module's caller gets (features.py)
ModuleOutputHook = Callable[[str, int, Any], Any]
# The leaf of a lone tensor returned, per output index of its node: made once (immutable),
# not once per module call
_N_LONE = 8
_LONE = tuple(OutputLeaf("", i) for i in range(_N_LONE))


class OpRecorder(Protocol):
    """What recording an identity op takes of the recorder (recorder.py)."""

    def resolve_inputs(self, func: Any, args: tuple[Any, ...], kwargs: Any) -> Inputs: ...

    def record(
        self,
        facts: FuncFacts,
        inputs: Inputs,
        outputs: tuple[Tensor, ...],
        writes: Any,
        frame: Any,
        outside_path: bool = False,
    ) -> OpRecord: ...


class ModuleOutputs:
    """The nodes each module call returned, read from the book's producers; an identity op
    is recorded through the recorder (weakly held: the recorder holds this)."""

    def __init__(self, book: TensorBook, recorder: OpRecorder) -> None:
        self._producers = book._producers
        self._recorder = weakref.proxy(recorder)
        # (module address, pass, the nodes that produced that module call's output tensors,
        # and per tensor its path in the value returned and which output of its node it is)
        self.calls: list[ModuleCall] = []
        # The features' module-output hooks, in the order they were attached (features.py)
        self.hooks: tuple[ModuleOutputHook, ...] = ()

    def on_output_with_hooks(
        self,
        address: str,
        pass_index: int,
        output: Any,
        first: int | None,
    ) -> Any:
        """`on_output`, then the features' hooks (the tracker calls this instead when a
        feature has one): the output the module's caller gets, which a hook may replace."""
        output = self.on_output(address, pass_index, output, first)
        if output is RAISED:
            return output
        for hook in self.hooks:
            output = hook(address, pass_index, output)
        return output

    def on_output(
        self,
        address: str,
        pass_index: int,
        output: Any,
        first: int | None,
    ) -> Any:
        """Note which nodes a module call returned. A tensor it returns untouched (an
        nn.Identity, a skipped branch) gets an "identity" op inside the module, so the
        module is a node of the graph and the value visibly flows through it.

        `first` is the index of the first node made inside this call, None for the root's:
        calls nest, so the nodes made inside it (its ops, those of the calls it made, the
        sources they read first) are those from `first` on."""
        if type(output) is Tensor:  # the common case: nothing here reads the tensor
            produced = self._producers.get(id(output))
            if first is not None and produced is not None and produced[0]() is output:
                node = produced[1]
                if node.index >= first:  # made inside this very call: no loop
                    index = produced[2]
                    leaf = _LONE[index] if index < _N_LONE else OutputLeaf("", index)
                    self.calls.append((address, pass_index, (node,), (leaf,)))
                    return output
            named = [("", output)]
        else:
            # A container's flattening could call torch functions. (Fresh context objects
            # here: one entered twice would not restore the state it found.)
            with torch._C.DisableTorchFunction():
                named = named_output_leaves(output)
        nodes, leaves = self._nodes(named, first)
        self.calls.append((address, pass_index, nodes, leaves))
        return output

    def _nodes(
        self, named: list[tuple[str, Tensor]], first: int | None
    ) -> tuple[list[OpRecord], list[OutputLeaf]]:
        nodes: list[OpRecord] = []
        leaves: list[OutputLeaf] = []
        for path, tensor in named:
            produced = self._producers.get(id(tensor))
            known = produced is not None and produced[0]() is tensor
            node = produced[1] if known else None  # pyright: ignore[reportOptionalSubscript]
            index = produced[2] if known else 0  # pyright: ignore[reportOptionalSubscript]
            if first is not None and (node is None or node.index < first):
                # Runs at the user's level, where this mode is active: describing the tensor
                # must not be recorded.
                with torch._C.DisableTorchFunction():
                    recorder = self._recorder
                    inputs = recorder.resolve_inputs(identity, (tensor,), None)
                    # Named after the line that called the module, outside the module's body.
                    frame = sys._getframe(0)
                    node = recorder.record(IDENTITY_FACTS, inputs, (tensor,), (), frame, True)
                    index = 0
            if node is not None:
                nodes.append(node)
                leaves.append(OutputLeaf(path, index))
        return nodes, leaves
