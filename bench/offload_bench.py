"""Offloaded traces: peak memory under a budget, time and disk bytes against an in-memory
trace (issue #21).

The model's saved activations are about 4x the budget (32 elementwise ops over 32 MiB
tensors: 1 GiB saved, budget 256 MiB). Each figure is one fresh process, so each peak RSS
(``ru_maxrss``) is that run's own:

- ``plain``: the forward alone (the reference peak);
- ``memory``: ``lw.trace(save="all")``, every value in memory;
- ``offload``: ``lw.trace(save="all", offload=dir, memory_budget=budget)``.

The targets: offload peak <= budget + plain peak x 1.1; the bytes on disk <= 1.05x the
saved bytes that went there (those past the budget); time against the in-memory trace.
``python -m bench.offload_bench`` prints the table and writes bench/results/offload.json;
``python -m bench.offload_bench --run offload`` is one process.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

MIB = 1 << 20
BUDGET = 256 * MIB
ROWS, COLS, STEPS = 2048, 4096, 16  # 32 MiB per activation


class Elementwise(nn.Module):
    """Each step's output is only needed by the next: a plain forward holds two at a time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(STEPS):
            x = torch.tanh(x * 1.01)
        return x


def run(kind: str) -> dict[str, float]:
    """One measurement in this process: peak RSS (MiB), seconds, bytes saved and on disk."""
    import lens_widget as lw

    torch.set_num_threads(1)
    model = Elementwise()
    x = torch.randn(ROWS, COLS)
    row: dict[str, float] = {}
    with torch.no_grad():
        start = time.perf_counter()
        if kind == "plain":
            model(x)
        elif kind == "memory":
            log = lw.trace(model, x)
            row["saved_bytes"] = log.saved_bytes
        else:
            with tempfile.TemporaryDirectory() as directory:
                log = lw.trace(model, x, offload=directory, memory_budget=BUDGET)
                row["saved_bytes"] = log.saved_bytes
                assert log.disk_values is not None
                row["offloaded_bytes"] = log.disk_values.nbytes
                row["disk_bytes"] = sum(f.stat().st_size for f in Path(directory).iterdir())
                del log
        row["seconds"] = time.perf_counter() - start
    row["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def measure() -> dict[str, dict[str, float]]:
    """Each kind in a fresh process."""
    rows = {}
    for kind in ("plain", "memory", "offload"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.offload_bench", "--run", kind],
            check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        rows[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    plain, offload = rows["plain"], rows["offload"]
    rows["summary"] = {
        "budget_mib": BUDGET / MIB,
        "peak_limit_mib": BUDGET / MIB + plain["peak_mib"] * 1.1,
        "offload_over_plain_peak_mib": offload["peak_mib"] - plain["peak_mib"],
        "disk_over_offloaded": offload["disk_bytes"] / offload["offloaded_bytes"],
        "time_vs_memory_trace": offload["seconds"] / rows["memory"]["seconds"],
    }
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", choices=("plain", "memory", "offload"))
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run(args.run)))
        return
    rows = measure()
    for kind, row in rows.items():
        print(f"{kind:8s} " + "  ".join(f"{k}={v:.3f}" for k, v in row.items()))
    out = Path(__file__).parent / "results" / "offload.json"
    out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
