"""Where a bench runs (`--device cpu|cuda`) and a clock that waits for it.

CUDA kernels run asynchronously: a timer stopped when Python returns measures the launches,
not the work, so every timed call on CUDA ends with `torch.cuda.synchronize`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

DEVICES = ("cpu", "cuda")


def pick_device(name: str) -> torch.device:
    """The torch device for `--device`; exits with a clear message when CUDA is missing."""
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit(
            f"--device cuda: no CUDA device is available to torch {torch.__version__} "
            f"(torch.cuda.is_available() is False; built with CUDA {torch.version.cuda}). "
            "Run on a machine with a GPU and a CUDA build of torch, or use --device cpu."
        )
    return torch.device(name)


def synchronizer(device: torch.device) -> Callable[[], None]:
    """What to call before reading a clock: waits for queued kernels on CUDA, nothing on CPU."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def synced_clock(device: torch.device) -> Callable[[], float]:
    """A clock for timing on `device`: this process's CPU time on the CPU (other processes on
    a busy machine leave it alone); on CUDA wall time, read after the queued kernels are done
    (the GPU's work is no CPU time)."""
    if device.type != "cuda":
        return time.process_time
    sync = synchronizer(device)

    def clock() -> float:
        sync()
        return time.perf_counter()

    return clock


def device_name(device: torch.device) -> str:
    """`cpu`, or the GPU's name, for results files and reports."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type
