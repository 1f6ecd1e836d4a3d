"""Per-rank logs of small models made in one process, for the rank view's tests
(``lw.load_ranks``, ``LensWidget.from_logs``) before traces of real torch.distributed runs
are in: each "rank" is traced on its own and its log told its rank, world size, and (for
the tensor-parallel one) which op is the collective and how its parameters are sharded.

- `data_parallel_logs`: every rank has the same weights and its own batch, as under DDP:
  every activation differs between ranks, no parameter does.
- `tensor_parallel_logs`: each rank holds a shard of a 2-layer MLP (fc1 by rows, fc2 by
  columns) and adds the other ranks' partial outputs in one op, the stand-in for the
  all_reduce of a RowwiseParallel layer: before it the ranks' values differ (their shards),
  from it on they are the same.
"""

from __future__ import annotations

import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.distributed import CollectiveInfo, ParamPlacement

WIDTH, HIDDEN, OUT, BATCH = 8, 16, 4, 4


class MLP3(nn.Module):
    """The 3-layer MLP of issue #22."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = nn.Linear(HIDDEN, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def _loss(out: torch.Tensor) -> torch.Tensor:
    return out.pow(2).mean()


def data_parallel_logs(world_size: int = 2) -> dict[int, lw.ModelLog]:
    """One log per rank: the same weights (seeded alike), batch `rank` of a seeded stream,
    a traced backward (gradients per rank)."""
    logs = {}
    for rank in range(world_size):
        torch.manual_seed(0)
        model = MLP3()
        batch = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(100 + rank))
        log = lw.trace(model, (batch,), backward=_loss)
        log.rank, log.world_size = rank, world_size
        logs[rank] = log
    return logs


class ShardedMLP(nn.Module):
    """One rank's shard of Linear(8, 16) -> ReLU -> Linear(16, 16) -> ReLU -> Linear(16, 4):
    fc1 keeps rows [rank*k, (rank+1)*k) (column-wise parallel), fc2 the same columns
    (row-wise parallel, partial sums), the head is replicated."""

    def __init__(self, full: MLP3, rank: int, world_size: int) -> None:
        super().__init__()
        k = HIDDEN // world_size
        rows = slice(rank * k, (rank + 1) * k)
        self.fc1 = nn.Linear(WIDTH, k)
        self.fc2 = nn.Linear(k, HIDDEN, bias=False)
        self.fc3 = full.fc3
        with torch.no_grad():
            self.fc1.weight.copy_(full.fc1.weight[rows])
            self.fc1.bias.copy_(full.fc1.bias[rows])
            self.fc2.weight.copy_(full.fc2.weight[:, rows])

    def partial(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))

    def forward(self, x: torch.Tensor, others: torch.Tensor) -> torch.Tensor:
        # the all_reduce: this rank's partial sum plus the other ranks' (given, one process)
        summed = torch.add(self.partial(x), others)
        return self.fc3(torch.relu(summed))


def tensor_parallel_logs(world_size: int = 2) -> dict[int, lw.ModelLog]:
    """One log per rank of ShardedMLP on the same batch; op "add" is the all_reduce over
    every rank, fc1 and fc2 weights are described as DTensor shards of a 1-d mesh."""
    torch.manual_seed(0)
    full = MLP3()
    shards = [ShardedMLP(full, rank, world_size) for rank in range(world_size)]
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        partials = [shard.partial(x) for shard in shards]
    k = HIDDEN // world_size
    logs = {}
    for rank, shard in enumerate(shards):
        others = torch.stack([p for r, p in enumerate(partials) if r != rank]).sum(0)
        log = lw.trace(shard, (x, others))
        log.rank, log.world_size = rank, world_size
        (reduce,) = [op for op in log.ops if op.func == "add"]
        log.collectives[reduce.label] = CollectiveInfo(
            "all_reduce", tuple(range(world_size)), partials[rank].nbytes, "forward", "dtensor"
        )
        shard_of = {"fc1.weight": ((HIDDEN, WIDTH), (k, WIDTH), "Shard(dim=0)"),
                    "fc1.bias": ((HIDDEN,), (k,), "Shard(dim=0)"),
                    "fc2.weight": ((HIDDEN, HIDDEN), (HIDDEN, k), "Shard(dim=1)")}  # fmt: skip
        for name, (full_shape, local_shape, placement) in shard_of.items():
            log.placements[name] = ParamPlacement(
                full_shape, local_shape, (placement,), (world_size,), ("tp",), "local shard"
            )
        logs[rank] = log
    return logs
