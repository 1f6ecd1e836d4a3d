"""A plain trace's labels, given on the first read of its log rather than in the trace (a
section's too when nothing reads them as it runs; a traced step's checkpoint recomputation
has them given when it first needs them: TensorBook.label_now).

Nothing a plain trace does after its pass reads a label (no save list or predicate, no
interventions, no error, no unseen write to warn about), so the layers and labels
(`Layers.place`), the ``:1`` of first passes that repeat, the output sinks' unique labels,
the helper functions ops ran in and the labels of each module call's outputs are given with
the rest of the records' details, when the log's records or modules are first read
(log/filled_on_read.py), in the order build_log gives them otherwise. The log read is the
same field by field.

Holds what the labelling reads (the layers, the label index, the records, the modules),
never the book or the module tracker, which hold the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from lens_widget.capture.helper_calls import name_helper_calls
from lens_widget.capture.links import Layers, relabel_first_passes
from lens_widget.capture.op_details import SOURCE, Pending
from lens_widget.log.records import ModuleInfo, OpRecord, OutputLeaf

_label_of = attrgetter("label")
# (module address, pass, the nodes its call returned, their leaves): module_outputs.py;
# a lone output's in tuples, cheaper than lists to make while the model runs
ModuleCall = tuple[str, int, Sequence[OpRecord], Sequence[OutputLeaf]]


def unique_label(by_label: dict[str, OpRecord], name: str) -> str:
    """`name`, or `name#2`, `name#3`... when a node already has it (a param named "output")."""
    label, n = name, 1
    while label in by_label:
        n += 1
        label = f"{name}#{n}"
    return label


def source_placer(layers: Layers, by_label: dict[str, OpRecord]) -> Callable[[OpRecord, Any], None]:
    """What gives a node whose label was left for later its label, as if given when it was
    made: an op's from its layer key, a source's own name made unique (key SOURCE)."""
    place_op = layers.place

    def place(node: OpRecord, key: Any) -> None:
        if key is not SOURCE:
            place_op(node, key)
            return
        name = node.label
        if name in by_label:  # a parameter named like a node before it
            name = node.label = node.func = node.layer = unique_label(by_label, name)
        by_label[name] = node

    return place


def place_pending(layers: Layers, by_label: dict[str, OpRecord], pending: list[Pending]) -> None:
    """Give the nodes of `pending` whose labels were left for later (an entry with a key)
    their labels, in the order they were made; their entries then hold no key."""
    place = source_placer(layers, by_label)
    for i, (node, site, size, dtype, device, key) in enumerate(pending):
        if key is not None:
            place(node, key)
            pending[i] = (node, site, size, dtype, device, None)


def module_output_labels(modules: dict[str, ModuleInfo], calls: list[ModuleCall]) -> None:
    """Each module call's outputs, by the labels of the nodes that produced them."""
    for address, pass_index, producers, leaves in calls:
        info = modules[address]
        info.outputs[pass_index] = list(map(_label_of, producers))
        info.output_leaves[pass_index] = list(leaves)


class LabelsOnRead:
    """The labelling build_log leaves to the first read of a plain trace's log."""

    def __init__(
        self,
        layers: Layers,
        by_label: dict[str, OpRecord],
        pending: list[Pending],
        ops: list[OpRecord],
        sinks: list[OpRecord],
        modules: dict[str, ModuleInfo],
        module_calls: list[ModuleCall],
    ) -> None:
        self._layers, self._by_label, self._pending = layers, by_label, pending
        self._ops, self._sinks = ops, sinks
        self._modules, self._module_calls = modules, module_calls

    def __call__(self) -> None:
        """Give the labels, in the order build_log gives them when it labels at once."""
        by_label, layers = self._by_label, self._layers
        place_pending(layers, by_label, self._pending)
        for sink in self._sinks:  # named after the output's path, made unique
            label = sink.label = sink.layer = unique_label(by_label, sink.func)
            by_label[label] = sink
        relabel_first_passes(layers.repeated, by_label)
        modules = self._modules
        class_of = {address: info.class_name for address, info in modules.items()}
        name_helper_calls(layers.by_key, self._ops, class_of)
        module_output_labels(modules, self._module_calls)
        self._ops = self._sinks = self._pending = []
        self._module_calls = []
