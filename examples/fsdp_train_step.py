"""Trace one FSDP2 training step on each rank and save each rank's log.

Run from the repository root, two ranks on this machine::

    torchrun --nproc-per-node 2 examples/fsdp_train_step.py --out runs/step

On CPU the ranks talk over gloo; with a GPU per rank they use NCCL, one GPU each. Each rank
writes ``runs/step/rank<r>``; open them in a notebook with ``lw.load("runs/step/rank0")``
(see docs/distributed.md). The model is a small Llama from a config with random weights.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import transformers
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import lens_widget as lw


def small_llama() -> transformers.LlamaForCausalLM:
    torch.manual_seed(0)  # the same weights on every rank
    config = transformers.LlamaConfig(
        vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", default="runs/step", help="folder of the per-rank logs")
    out = parser.parse_args().out

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    ranks_here = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    on_gpu = torch.cuda.is_available() and torch.cuda.device_count() >= ranks_here
    if on_gpu:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if on_gpu else "gloo")
    rank = dist.get_rank()
    device = torch.device("cuda", local_rank) if on_gpu else torch.device("cpu")

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    with device:  # its weights made there
        model = small_llama()
    for layer in model.model.layers:  # one FSDP unit per decoder block, then the root
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # Data parallel: each rank its own batch
    ids = torch.randint(0, 96, (2, 12), generator=torch.Generator().manual_seed(1 + rank))
    ids = ids.to(device)

    with lw.tracing(model, grads=True) as t:
        model(ids, labels=ids).loss.backward()
        optimizer.step()
    log = t.log
    log.save(f"{out}/rank{rank}")
    sent = sum(c.nbytes for c in log.collectives.values())
    print(
        f"rank {log.rank}/{log.world_size}: {len(log.ops)} ops, {len(log.collectives)} "
        f"collectives ({sent} bytes sent), {len(log.engine_calls)} engine calls -> "
        f"{out}/rank{rank}"
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
