"""lw.Monitor's cost over a training loop (issue #23), in one run, 1 thread:

- ``every=1000``: 1,000 unsampled steps of a small MLP (step 0, traced, runs before the
  clock): their cost against plain steps (target: within 5%);
- ``every=1``: every step of a small GPT-2 training loop (2 layers, d=256, 8 x 128 tokens;
  and at GPT-2 small's width, d=768, 4 x 128 tokens) traced, with gradients, and every
  op's activation and gradient statistics (target: <= 1.3x plain, issue #37; TorchLens' every-op
  every-step history is 2.28x);
- ``module hooks``: what wandb.watch-style tools do, the same statistics per module output
  from forward hooks, every step, for comparison.

Each figure is the median of `rounds` interleaved rounds. ``python -m bench.monitor_bench``
prints the table and writes bench/results/monitor.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.stats import activation_stats


def _mlp() -> tuple[nn.Module, Callable[[], Any]]:
    model = nn.Sequential(
        nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1)
    )
    x, y = torch.randn(16, 32), torch.randn(16, 1)
    return model, lambda: nn.functional.mse_loss(model(x), y)


def _gpt2(width: int = 256, batch: int = 8) -> tuple[nn.Module, Callable[[], Any]]:
    """A 2-layer GPT-2 of `width` (768: GPT-2 small's), `batch` x 128 tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    heads = width // 64
    config = GPT2Config(n_layer=2, n_embd=width, n_head=heads, vocab_size=2000, n_positions=128)
    model = GPT2LMHeadModel(config).train()
    ids = torch.randint(0, 2000, (batch, 128), generator=torch.Generator().manual_seed(0))
    return model, lambda: model(ids, labels=ids).loss


def _loop(model: nn.Module, loss_of: Callable[[], Any], steps: int, step_context: Any) -> float:
    """Seconds for `steps` optimizer steps; `step_context()` wraps each."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    for _ in range(steps):
        with step_context():
            loss_of().backward()
            opt.step()
            opt.zero_grad()
    return time.perf_counter() - start


def _module_hooks(model: nn.Module) -> Callable[[], None]:
    """Statistics of every module's output each step, as a hook-based watcher computes them."""

    def hook(module: nn.Module, args: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor):
            with torch.no_grad():
                activation_stats([output.detach()])

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    return lambda: [h.remove() for h in handles] and None


def measure(rounds: int = 3, steps: int = 1000, gpt2_steps: int = 10) -> dict[str, Any]:
    torch.set_num_threads(1)
    names = ("plain_mlp", "every1000", "plain_gpt2", "every1", "hooks", "plain_768", "every1_768")
    times: dict[str, list[float]] = {k: [] for k in names}
    mlp, mlp_loss = _mlp()
    gpt2, gpt2_loss = _gpt2()
    wide, wide_loss = _gpt2(768, 4)
    for _ in range(rounds):
        times["plain_mlp"].append(_loop(mlp, mlp_loss, steps, nullcontext))
        sparse = lw.Monitor(mlp, every=steps + 1)
        _loop(mlp, mlp_loss, 1, sparse.step)  # step 0, traced: the rest are not
        times["every1000"].append(_loop(mlp, mlp_loss, steps, sparse.step))
        times["plain_gpt2"].append(_loop(gpt2, gpt2_loss, gpt2_steps, nullcontext))
        dense = lw.Monitor(gpt2, every=1)
        times["every1"].append(_loop(gpt2, gpt2_loss, gpt2_steps, dense.step))
        remove = _module_hooks(gpt2)
        times["hooks"].append(_loop(gpt2, gpt2_loss, gpt2_steps, nullcontext))
        remove()
        times["plain_768"].append(_loop(wide, wide_loss, 3, nullcontext))
        times["every1_768"].append(_loop(wide, wide_loss, 3, lw.Monitor(wide, every=1).step))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "steps": steps, "gpt2_steps": gpt2_steps, "rounds": rounds, "seconds": med,
        "every1000_vs_plain": med["every1000"] / med["plain_mlp"],
        "every1_vs_plain": med["every1"] / med["plain_gpt2"],
        # each round's ratio (its plain and monitored loops run one after the other), sorted:
        # the machine's drift between rounds moves the medians above more than these
        "every1_vs_plain_per_round": sorted(
            every / plain for every, plain in zip(times["every1"], times["plain_gpt2"], strict=True)
        ),
        "module_hooks_vs_plain": med["hooks"] / med["plain_gpt2"],
        "every1_vs_plain_gpt2_small_width": med["every1_768"] / med["plain_768"],
        "gpt2_ops_per_step": len(dense.history.steps[-1].ops),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.rounds)
    print(json.dumps(result, indent=2))
    out = Path(__file__).parent / "results" / "monitor.json"
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
