"""What each module call returned: the nodes that produced its outputs (the recorder's
second half, kept apart for size). A tensor a module returns untouched gets an "identity"
op inside the module, so the module is a node of the graph.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import torch

from lens_widget.capture.func_facts import IDENTITY_FACTS, FuncFacts, identity
from lens_widget.capture.module_tracker import ModuleTracker
from lens_widget.log.records import OpRecord
from lens_widget.log.replay import tensor_leaves

Tensor = torch.Tensor


class ModuleOutputs:
    """Mixed into the Recorder: its producers, tracker, input resolution and records."""

    _producers: dict[int, tuple[Any, OpRecord, int, int]]
    tracker: ModuleTracker
    # (module address, pass, the nodes that produced that module call's output tensors)
    module_outputs: list[tuple[str, int, list[OpRecord]]]

    if TYPE_CHECKING:  # the Recorder's and TensorBook's

        def _resolve_inputs(self, func: Any, args: tuple[Any, ...], kwargs: Any) -> Any: ...

        def _record(
            self,
            facts: FuncFacts,
            inputs: Any,
            outputs: tuple[Tensor, ...],
            writes: Any,
            frame: Any,
            outside_path: bool = False,
        ) -> OpRecord: ...

    def _on_module_output(
        self, address: str, pass_index: int, output: Any, entry: tuple[str, int] | None
    ) -> Any:
        """Note which nodes a module call returned. A tensor it returns untouched (an
        nn.Identity, a skipped branch) gets an "identity" op inside the module, so the
        module is a node of the graph and the value visibly flows through it.

        `entry` is the module's (address, pass) on the tracker's stack, None for the root:
        the ops that ran inside this call are those whose module_stack holds that tuple."""
        if type(output) is Tensor:  # the common case: nothing here reads the tensor
            produced = self._producers.get(id(output))
            if entry is not None and produced is not None and produced[0]() is output:
                # Made by an op inside this very call (its stack holds `entry`): no loop.
                node = produced[1]
                depth = len(self.tracker.stack)
                stack = node.module_stack
                if len(stack) >= depth and stack[depth - 1] is entry:
                    self.module_outputs.append((address, pass_index, [node]))
                    return output
            nodes = self._module_output_nodes((output,), entry)
        else:
            # A container's flattening could call torch functions. (Fresh context objects
            # here: one entered twice would not restore the state it found.)
            with torch._C.DisableTorchFunction():
                nodes = self._module_output_nodes(tensor_leaves(output), entry)
        self.module_outputs.append((address, pass_index, nodes))
        return output

    def _module_output_nodes(self, tensors: Any, entry: tuple[str, int] | None) -> list[OpRecord]:
        nodes = []
        depth = len(self.tracker.stack)
        for tensor in tensors:
            produced = self._producers.get(id(tensor))
            node = produced[1] if produced is not None and produced[0]() is tensor else None
            if entry is not None and (
                node is None
                or len(node.module_stack) < depth
                or node.module_stack[depth - 1] is not entry
            ):
                # Runs at the user's level, where this mode is active: describing the tensor
                # must not be recorded.
                with torch._C.DisableTorchFunction():
                    inputs = self._resolve_inputs(identity, (tensor,), None)
                    # Named after the line that called the module, outside the module's body.
                    frame = sys._getframe(0)
                    node = self._record(IDENTITY_FACTS, inputs, (tensor,), (), frame, True)
            if node is not None:
                nodes.append(node)
        return nodes
