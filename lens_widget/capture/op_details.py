"""The parts of an op's record that are filled after the pass: its links to its parents, its
source line, and the names and sizes of its output metadata.

Between two ops of a real model, its kernels push the tracer's objects out of the CPU's
caches, so every object the per-op path touches costs a cache miss or several: filling these
fields once per op during the pass cost about twice what the same code costs in one loop over
all ops after it. The pass keeps what they are made from (the producers of the op's inputs are
in ``replay[1]``; the source site, the output's ``torch.Size``, dtype and device are in a
`Pending` entry) and `fill_details` makes the same fields in op order, before anything reads
them (build_log.py). Records are never handed out half-filled: when a save predicate will read
each record as its op runs, the recorder fills each at once instead.
"""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING

import torch

from lens_widget.capture.links import link_parents
from lens_widget.capture.tensor_book import DTYPE_NAMES, TensorBook

if TYPE_CHECKING:
    from lens_widget.log.records import OpRecord

# (record, source site, its first output's shape, dtype and device; None without outputs)
Pending = tuple["OpRecord", int, "torch.Size | None", "torch.dtype | None", "torch.device | None"]


def fill_details(book: TensorBook, pending: list[Pending]) -> None:
    """Fill parents, parent_args, from_input, the parents' children, source, source_code,
    shape, dtype, device, and for ops with one output shapes and nbytes, of each pending
    record, in the order the ops ran (a parent's from_input is known before its children's);
    empties `pending`."""
    texts, source_text = book.source_text.texts, book.source_text
    device_names = book.device_names
    for node, site, size, dtype, device in pending:
        node.parents, node.parent_args, node.from_input = link_parents(
            node.label,
            node.replay[1],  # type: ignore[index]
        )
        node.source, node.source_code = texts.get(site) or source_text(site)
        if size is None or dtype is None or device is None:
            continue
        shape = node.shape = tuple(size)
        node.dtype = DTYPE_NAMES.get(dtype) or book.dtype_name(dtype)
        node.device = device_names.get(device) or book.device_name(device)
        if not node.shapes:  # one output (an op with several has them already)
            node.shapes = (shape,)
            node.nbytes = prod(shape) * dtype.itemsize
    pending.clear()
