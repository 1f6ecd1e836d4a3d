"""Models for the distributed tests and example: a 3-layer MLP and a tiny Llama, with a
tensor-parallel plan for each (their Linear layers, column- then row-wise), and the engines
that wrap them the same way in the tests (tests/python/dist_worker.py) and the GPU bench
(bench/distributed_gpu.py).

The same weights on every build and every rank (`build` seeds them), so each rank starts
from the model an undistributed trace sees.
"""

from __future__ import annotations

from typing import Any

import torch
import transformers
from torch import nn

from .case import ZooCase, build, generator, token_ids


class MLP3(nn.Module):
    """Three Linear layers, ReLU between them."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.l1 = nn.Linear(8, width)
        self.l2 = nn.Linear(width, width)
        self.l3 = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))


def mlp3() -> ZooCase:
    model = build(MLP3)
    x = torch.randn(4, 8, generator=generator(3))
    return ZooCase("mlp3", model, (x,), description="MLP 8-16-16-4", min_ops=5)


def llama_small() -> ZooCase:
    """A 2-layer Llama (d=64, 4 heads, SwiGLU MLP of nn.Linear), no dropout."""
    cfg = transformers.LlamaConfig(
        vocab_size=96,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
    )
    model = build(lambda: transformers.LlamaForCausalLM(cfg))
    ids = token_ids(96, 12, batch=2)
    return ZooCase("llama_small", model, (ids,), {"labels": ids}, description="Llama d=64 x2")


def tp_plan(name: str) -> dict[str, Any]:
    """The tensor-parallel plan of a model above: Linear layers column- then row-wise."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    if name == "mlp3":
        return {"l1": ColwiseParallel(), "l2": RowwiseParallel()}
    plan: dict[str, Any] = {}
    for i in range(2):
        mlp = f"model.layers.{i}.mlp"
        plan[f"{mlp}.gate_proj"] = ColwiseParallel()
        plan[f"{mlp}.up_proj"] = ColwiseParallel()
        plan[f"{mlp}.down_proj"] = RowwiseParallel()
    return plan


def fsdp_units(model: nn.Module) -> list[nn.Module]:
    """The modules `fully_shard` wraps one by one before the root: layers or decoder blocks."""
    if isinstance(model, MLP3):
        return [model.l1, model.l2, model.l3]
    return list(model.model.layers)  # pyright: ignore[reportAttributeAccessIssue, reportArgumentType]  # a LlamaForCausalLM


def wrap_engine(engine: str, model: nn.Module, device: torch.device | None = None) -> nn.Module:
    """`model` under an engine over every rank of one device mesh: "ddp", "fsdp" (`fsdp_units`
    one by one, then the root) or "tp" (`tp_plan`). Call it inside torch.distributed."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    device = device if device is not None else torch.device("cpu")
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    if engine == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)
    if engine == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for unit in fsdp_units(model):
            fully_shard(unit, mesh=mesh)
        return fully_shard(model, mesh=mesh)  # pyright: ignore[reportReturnType]
    from torch.distributed.tensor.parallel import parallelize_module

    return parallelize_module(
        model, mesh, tp_plan("mlp3" if isinstance(model, MLP3) else "llama_small")
    )


def local_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """A DTensor's shard on this rank; any other tensor as it is."""
    to_local = getattr(tensor, "to_local", None)
    return to_local() if to_local is not None else tensor


DISTRIBUTED_MODELS = {"mlp3": mlp3, "llama_small": llama_small}
