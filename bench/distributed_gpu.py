"""A traced training step under FSDP2, DDP and tensor parallel on GPUs with NCCL (issue #22).

    torchrun --nproc-per-node <GPUs> -m bench.distributed_gpu          # one rank per GPU
    torchrun --nproc-per-node 2 -m bench.distributed_gpu --device cpu  # gloo, a smoke run

Per engine, on the 2-layer Llama of `model_zoo.distributed` (same weights on every rank,
each rank its own batch where the engine is data parallel): an untraced step, then the same
step traced with gradients (`lw.tracing(model, grads=True)`), twice each (the first warms
up lazy initialisations). Printed per rank: the log's ops and collectives, the largest
difference between the traced and the untraced step's output and parameter gradients (0.0:
bit-equal), and the synchronising CUDA calls of each step (`torch.cuda.set_sync_debug_mode`,
as `bench.host_sync` counts them): a traced step must not add one per op.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

import lens_widget as lw
from bench.host_sync import count_syncs
from model_zoo.distributed import llama_small, local_tensor, wrap_engine


def _step(engine: str, device: torch.device) -> tuple[nn.Module, Callable[[], torch.Tensor]]:
    case = llama_small()
    ids = case.args[0]
    if engine != "tp":  # data parallel: each rank its own batch
        ids = (ids + dist.get_rank()) % 96
    ids = ids.to(device)
    model = wrap_engine(engine, case.model.to(device), device)

    def run() -> torch.Tensor:
        model.zero_grad(set_to_none=True)
        out = model(ids, labels=ids)
        out.loss.backward()
        return local_tensor(out.logits).detach()

    return model, run


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {
        n: local_tensor(p.grad).clone() for n, p in model.named_parameters() if p.grad is not None
    }


def _largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def _syncs(call: Callable[[], Any], device: torch.device) -> int | str:
    return count_syncs(call)[0] if device.type == "cuda" else "-"


def check(engine: str, device: torch.device) -> str:
    plain_model, plain = _step(engine, device)
    plain()  # warm-up
    plain_syncs = _syncs(plain, device)
    plain_out, plain_grads = plain(), _grads(plain_model)
    model, step = _step(engine, device)
    step()  # warm-up, untraced
    logs: list[lw.ModelLog] = []

    def traced() -> None:
        with lw.tracing(model, grads=True) as t:
            step()
        logs.append(t.log)

    traced_syncs = _syncs(traced, device)
    with lw.tracing(model, grads=True) as t:
        out = step()
    log = t.log
    diff = max(
        float((out.float() - plain_out.float()).abs().max()),
        _largest_difference(_grads(model), plain_grads),
    )
    kinds = sorted({f"{c.kind}/{c.phase}" for c in log.collectives.values()})
    return (
        f"rank {log.rank}/{log.world_size} {engine}: {len(log.ops)} ops, "
        f"{len(log.collectives)} collectives {kinds}, {len(log.engine_calls)} engine calls; "
        f"traced - untraced (output, grads): {diff:.3g}; synchronising calls per step: "
        f"untraced {plain_syncs}, traced {traced_syncs}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--engines", default="fsdp,ddp,tp")
    args = parser.parse_args(argv)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        if dist.get_rank() == 0 and device.type == "cuda":
            gpus = f"{torch.cuda.device_count()} GPU(s): {torch.cuda.get_device_name()}"
            print(f"{gpus}, NCCL {torch.cuda.nccl.version()}, world {dist.get_world_size()}")
        for engine in args.engines.split(","):
            print(check(engine, device), flush=True)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
