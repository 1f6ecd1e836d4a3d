"""Labels and parent/child links.

An op's label is its layer's name (``linear_2_7``) while the layer has run once, and
``linear_2_7:k`` for its k-th pass. Whether a layer will run again is known only later, so
the first pass of each layer that repeats is renamed ``…:1`` after the forward, together
with the few links that name it (`relabel_first_passes`). Labels (`Layers.place`) and links
(`link_parents`) are given in the order the ops ran, after the pass in a plain trace
(op_details.py), as each op runs where something reads them then.
"""

from __future__ import annotations

from typing import Any

from lens_widget.log.records import OpRecord, ParentArg

# (position, parent node, output index) per tensor argument of an op, in argument order
ParentRefs = list[tuple[str, OpRecord, int]]

_new_tuple = tuple.__new__  # ParentArg's own __new__ is a slow Python function


class Layer:
    """One op identity that repeats across passes (loops, reused modules)."""

    __slots__ = ("base", "passes", "first", "later")

    def __init__(self, base: str) -> None:
        self.base = base
        self.passes = 0
        self.first: OpRecord | None = None
        self.later: list[OpRecord] = []


class Layers:
    """Which layer each op belongs to, and its pass: (module path, function, call path) ->
    Layer, and the layers that ran more than once. `place` gives an op its label, in the
    order the ops ran: while they run, or after the pass (op_details.py)."""

    def __init__(self, by_label: dict[str, OpRecord]) -> None:
        self.by_key: dict[Any, Layer] = {}
        self.repeated: list[Layer] = []
        self._func_counts: dict[str, int] = {}
        self._by_label = by_label  # every node by label, filled as labels are given

    def place(self, node: OpRecord, key: tuple[Any, str, Any]) -> None:
        """Set `node`'s layer, pass_index and label (its layer's name on a first pass,
        ``name:k`` on the k-th) and index it by label; `key`: (module path, function name,
        call path)."""
        layer = self.by_key.get(key)
        if layer is None:
            name = key[1]
            clean = name.strip("_") or name  # __add__ -> add, as FuncFacts.clean
            count = self._func_counts[clean] = self._func_counts.get(clean, 0) + 1
            layer = self.by_key[key] = Layer(f"{clean}_{count}_{len(self.by_key) + 1}")
        passes = layer.passes = layer.passes + 1
        base = layer.base
        label = node.label = base if passes == 1 else f"{base}:{passes}"
        node.layer, node.pass_index = base, passes
        self._by_label[label] = node
        if passes == 1:
            layer.first = node
        else:
            if passes == 2:
                self.repeated.append(layer)
            layer.later.append(node)


def link_parents(label: str, parent_refs: ParentRefs) -> tuple[list[str], list[ParentArg], bool]:
    """(parents, parent_args, from_input) of a new node `label`; it becomes a child of each
    parent. A parent passed twice is one parent with two ParentArgs."""
    if len(parent_refs) == 1:  # the common case, without a loop
        position, parent, output_index = parent_refs[0]
        parent_label = parent.label
        parent.children.append(label)
        return (
            [parent_label],
            [_new_tuple(ParentArg, (parent_label, position, output_index))],
            parent.from_input,
        )
    parents: list[str] = []
    parent_args: list[ParentArg] = []
    from_input = False
    for position, parent, output_index in parent_refs:
        parent_label = parent.label
        parent_args.append(_new_tuple(ParentArg, (parent_label, position, output_index)))
        if parent_label not in parents:
            parents.append(parent_label)
            parent.children.append(label)
            if parent.from_input:
                from_input = True
    return parents, parent_args, from_input


def relabel_first_passes(repeated: list[Layer], by_label: dict[str, OpRecord]) -> None:
    """Give the first pass of every layer that ran more than once its ``:1`` label, in the
    node, in every link that names it and in `by_label` (every node by label), and set
    n_passes on all passes of those layers."""
    for layer in repeated:
        first = layer.first
        assert first is not None and first.replay is not None  # a layer starts at an op
        old = first.label
        new = first.label = f"{layer.base}:1"
        del by_label[old]  # no other node has it: later passes are named `base:k`
        by_label[new] = first
        first.n_passes = layer.passes
        for node in layer.later:
            node.n_passes = layer.passes
        for _, parent, _ in first.replay[1]:
            _replace(parent.children, old, new)
        for child_label in first.children:
            child = by_label[child_label]
            _replace(child.parents, old, new)
            child.parent_args[:] = [
                _new_tuple(ParentArg, (new, arg.position, arg.output_index))
                if arg.parent == old
                else arg
                for arg in child.parent_args
            ]


def _replace(labels: list[str], old: str, new: str) -> None:
    for i, label in enumerate(labels):
        if label == old:
            labels[i] = new
