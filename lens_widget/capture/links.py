"""Labels and parent/child links, made while the model runs.

An op's label is its layer's name (``linear_2_7``) while the layer has run once, and
``linear_2_7:k`` for its k-th pass. Whether a layer will run again is known only later, so
the first pass of each layer that repeats is renamed ``…:1`` after the forward, together
with the few links that name it (`relabel_first_passes`). Everything else is final when
the op is recorded: no pass over all nodes is needed afterwards.
"""

from __future__ import annotations

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
        assert first is not None
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
