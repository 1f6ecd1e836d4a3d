"""Offloaded traces: peak memory under a budget, time and disk bytes against an in-memory
trace (issue #21).

The model's saved activations are about 4x the budget (32 elementwise ops over 32 MiB
tensors: 1 GiB saved, budget 256 MiB). Each figure is one fresh process, so each peak RSS
(``ru_maxrss``) is that run's own:

- ``plain``: the forward alone (the reference peak);
- ``memory``: ``lw.trace(save="all")``, every value in memory;
- ``offload``: ``lw.trace(save="all", offload=dir, memory_budget=budget)``;
- ``widget``: an offloaded log of 20,000 ops (2.6 GB on disk) opened in the widget, and
  one click-to-plot request: its time and the bytes it read (`mapped_kib`).

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


def mapped_kib(directory: Path) -> int:
    """KiB of the files under `directory` that this process has mapped and read (the
    resident pages of those mappings, /proc/self/smaps): the bytes a request really read."""
    inside = str(directory.resolve()) + "/"
    total, counting = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
            counting = len(head) == 6 and head[5].startswith(inside)
        elif counting and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def widget_on_a_big_log() -> dict[str, float]:
    """An offloaded log of 20,000 ops (128 KiB each, 2.6 GB on disk) in the widget: the
    seconds to open it, one click-to-plot request's time and the KiB it read from disk."""
    import lens_widget as lw
    from lens_widget.widget import LensWidget

    class Chain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(10_000):
                x = torch.tanh(x * 1.01)
            return x

    row: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as name, torch.no_grad():
        directory = Path(name)
        start = time.perf_counter()
        log = lw.trace(Chain(), torch.randn(32, 1024), offload=directory)
        row["trace_s"] = time.perf_counter() - start
        row["ops"] = len(log.ops)
        row["disk_gb"] = sum(f.stat().st_size for f in directory.iterdir()) / 1e9
        start = time.perf_counter()
        widget = LensWidget.from_log(log)
        row["open_s"] = time.perf_counter() - start
        row["read_at_open_kib"] = mapped_kib(directory)
        op = log.ops[len(log.ops) // 2]
        sent: list[object] = []
        widget.send = lambda msg, buffers=None: sent.append(msg)  # pyright: ignore[reportAttributeAccessIssue]  # stands in for the comm
        start = time.perf_counter()
        message = {"type": "request", "id": 1, "method": "activation", "params": {"id": op.label}}
        widget._on_msg(widget, message, [])  # pyright: ignore[reportPrivateUsage]  # as the frontend's message arrives
        row["click_to_plot_ms"] = (time.perf_counter() - start) * 1000
        row["read_by_click_kib"] = mapped_kib(directory) - row["read_at_open_kib"]
        row["value_kib"] = op.activation.untyped_storage().nbytes() / 1024
        widget.close()
        del widget, log
    return row


def run(kind: str) -> dict[str, float]:
    """One measurement in this process: peak RSS (MiB), seconds, bytes saved and on disk."""
    import lens_widget as lw

    if kind == "widget":
        return widget_on_a_big_log()

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
    for kind in ("plain", "memory", "offload", "widget"):
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
    parser.add_argument("--run", choices=("plain", "memory", "offload", "widget"))
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
