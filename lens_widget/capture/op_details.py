"""The parts of a record that are filled after the pass: an op's links to its parents and the
parameters it read, and any node's source line and the names and sizes of its (first)
output's metadata.

Between two ops of a real model, its kernels push the tracer's objects out of the CPU's
caches, so every object the per-op path touches costs a cache miss or several: filling these
fields once per op during the pass cost about twice what the same code costs in one loop over
all ops after it. The pass keeps what they are made from (the producers of the op's inputs are
in ``replay[1]``; the source site, the output's ``torch.Size``, dtype and device are in a
`Pending` entry) and `fill_details` makes the same fields in the order the nodes were made,
before anything reads them (build_log.py). Records are never handed out half-filled: when a
save predicate will read each record as its op runs, the recorder fills each at once instead.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import torch

from lens_widget.capture.call_site import SourceTexts
from lens_widget.capture.links import link_parents
from lens_widget.log.records import OpRecord, ParamUse

# (record, source site, its first output's shape, dtype and device (None without outputs),
# what labels it when that is left for later too: an op's layer key, SOURCE for a source,
# None when labelled already)
Pending = tuple[OpRecord, int, torch.Size | None, torch.dtype | None, torch.device | None, Any]
SOURCE: Any = ("source",)

DTYPE_NAMES = {
    dtype: str(dtype).removeprefix("torch.")
    for dtype in vars(torch).values()
    if isinstance(dtype, torch.dtype)
}


def dtype_name(dtype: torch.dtype) -> str:
    name = DTYPE_NAMES.get(dtype)
    return name if name is not None else str(dtype).removeprefix("torch.")


class DetailNames:
    """What records' details are named from, gathered across a trace: each call site's
    source text, each device's name, the ParamUse an op reading a parameter lists. The
    recorder's book owns one; a log whose records are filled on their first read holds it
    alone (not the book, which reaches the model through its module tracker)."""

    def __init__(self) -> None:
        self.source_text = SourceTexts()
        self.device_names: dict[torch.device, str] = {}
        # param or buffer source -> the ParamUse an op reading it lists
        self.param_uses: dict[OpRecord, ParamUse] = {}

    def device_name(self, device: torch.device) -> str:
        name = self.device_names.get(device)
        if name is None:
            name = self.device_names[device] = str(device)
        return name

    @property
    def saw_meta(self) -> bool:
        """Some node is on the meta device: its "value" is dropped (build_log.py)."""
        return any(device.type == "meta" for device in self.device_names)


# The fields fill_details sets on every record it fills (shape, dtype and device when it has
# an output): the per-op builders (op_recording.py, source_records.py) leave them unset, and
# set shape, dtype and device to None for an op without outputs (a failed call's).
FILLED_FIELDS = frozenset(
    {"parents", "parent_args", "from_input", "source", "source_code", "shape", "dtype", "device"}
)

# Gives a node whose label was left for later its label (`key`: its layer key, or SOURCE)
Place = Callable[[OpRecord, Any], None]


def fill_details(names: DetailNames, pending: list[Pending], place: Place | None) -> None:
    """Fill each pending record, in the order the nodes were made: its label if left for
    later (by `place`; None when labels_on_read.py gave them); an op's parents, parent_args,
    from_input, params and its parents' children; any node's source, source_code, shape,
    dtype, device, and (one output) shapes and nbytes.
    Empties `pending`.

    A parent is filled before its children (a source before the ops that read it), so its
    label, from_input and ParamUse are known when theirs are made."""
    texts, source_text = names.source_text.texts, names.source_text
    device_names, param_uses = names.device_names, names.param_uses
    for node, site, size, dtype, device, key in pending:
        if key is not None and place is not None:
            place(node, key)
        if node.replay is not None:  # an op (sources have no parents)
            refs = node.replay[1]
            node.parents, node.parent_args, node.from_input = link_parents(node.label, refs)
            if param_uses:
                uses = [use for _, parent, _ in refs if (use := param_uses.get(parent))]
                if uses:
                    node.params = tuple(uses)
        node.source, node.source_code = texts.get(site) or source_text(site)
        if size is None or dtype is None or device is None:
            continue
        shape = node.shape = tuple(size)
        node.dtype = DTYPE_NAMES.get(dtype) or dtype_name(dtype)
        node.device = device_names.get(device) or names.device_name(device)
        if not node.shapes:  # one output (an op with several has them already)
            node.shapes = (shape,)
            numel = prod(shape)
            node.nbytes = numel * dtype.itemsize
            if node.kind == "param" or node.kind == "buffer":
                # The ParamUse of the ops that read it (its generated __new__ is slow Python).
                param_uses[node] = tuple.__new__(ParamUse, (node.label, shape, numel))
    pending.clear()
