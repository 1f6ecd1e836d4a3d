"""DDP's bucket all-reduces as collective ops of a traced backward.

DDP's reducer issues them from C++, which no Python hook sees: after each traced backward
that synchronised (not under ``no_sync``), DistributedCapture (distributed_capture.py)
records one op per bucket from the reducer's buckets, marked ``observed=False``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist
from torch import nn

from lens_widget.capture.model_names import ModelNames
from lens_widget.log.distributed import CollectiveInfo
from lens_widget.log.records import OpRecord

if TYPE_CHECKING:
    from lens_widget.capture.tensor_book import TensorBook

Tensor = torch.Tensor
# (kind, func, parents, outputs, frame) -> the op recorded: DistributedCapture._record
RecordCollective = Callable[
    [str, Callable[..., Any], list[tuple[str, OpRecord, int]], tuple[Tensor, ...], None],
    OpRecord,
]


def ddp_bucket_collectives(
    wrappers: list[nn.Module],
    book: TensorBook,
    names: ModelNames,
    world_size: int,
    record: RecordCollective,
) -> Iterator[tuple[OpRecord, CollectiveInfo]]:
    """Each bucket all-reduce of the DDP `wrappers` that synchronise, recorded as an op."""
    for wrapper in wrappers:
        reducer = getattr(wrapper, "reducer", None)
        if reducer is None or not getattr(wrapper, "require_backward_grad_sync", True):
            continue
        group = getattr(wrapper, "process_group", None)
        with torch._C.DisableTorchFunction():
            buckets = reducer._get_zeros_like_grad_buckets()
            for bucket in buckets:
                params = bucket.parameters()
                parents = [(f"{i}", *p) for i, t in enumerate(params) if (p := book.producer_of(t))]
                grads = tuple(p.grad for p in params if p.grad is not None)
                node = record("all_reduce", dist.all_reduce, parents, grads, None)
                buffer = bucket.buffer()
                info = CollectiveInfo(
                    kind="all_reduce",
                    group_ranks=tuple(dist.get_process_group_ranks(group))
                    if group is not None
                    else tuple(range(world_size)),
                    nbytes=buffer.numel() * buffer.element_size(),
                    phase="backward",
                    engine="ddp",
                    observed=False,
                    params=tuple(
                        named[0] for p in params if (named := names.tensors.get(id(p))) is not None
                    ),
                )
                yield node, info
