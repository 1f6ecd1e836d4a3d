"""A source node's record (a parameter, buffer, input or const first used by an op), made
without OpRecord's __init__.

ResNet-50 makes one per parameter (266 against 201 ops) on every trace; its keyword
__init__ (35 fields, three default lists) costs about 1 µs more per record than setting the
fields by name (tests/python/test_records_by_name.py checks that every field is set).
"""

from __future__ import annotations

from lens_widget.log.records import UNSET_FLOPS, NodeKind, OpRecord

_new_record = object.__new__


def new_source_record(
    name: str,
    kind: NodeKind,
    index: int,
    module_stack: tuple[tuple[str, int], ...],
    requires_grad: bool,
) -> OpRecord:
    """The record OpRecord(label=name, kind=kind, func=name, index=index, layer=name,
    module=..., module_stack=..., requires_grad=..., from_input=kind == "input") makes: the
    other fields at their defaults (shape, source: filled with the ops', op_details.py)."""
    node = _new_record(OpRecord)
    node.label = name
    node.kind = kind
    node.func = name
    node.index = index
    node.layer = name
    node.pass_index = 1
    node.n_passes = 1
    node.module = module_stack[-1][0] if module_stack else ""
    node.module_stack = module_stack
    node.function = ""
    # shape, dtype, device, source, source_code: set by fill_details
    node.nbytes = 0
    node.requires_grad = requires_grad
    node.shapes = ()
    node.params = ()
    node.parents = []
    node.parent_args = []
    node.children = []
    node.from_input = kind == "input"
    node.feeds_output = False
    node.inplace = False
    node.failed = False
    node.error = None
    node.time_ms = None
    node.intervened = False
    node.activations = None
    node.nested_shapes = None
    node.replay = None
    node._flops = UNSET_FLOPS
    node._stats = None
    node.grads = None
    return node
