"""Run a script as N gloo ranks on this machine: 127.0.0.1, a free port, a time limit.

Each rank is a subprocess with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR...);
its output goes to files (no pipe can fill and stall it). Past the time limit every rank
still running is killed by its pid. The caller gets each rank's exit code and output.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fsdp2_runs_on_cpu() -> bool:
    """torch 2.6's FSDP2 cannot run on a CPU, traced or not: its all-gather records an event
    on torch.cpu.Stream, which has no record_event before torch 2.7."""
    import torch

    return hasattr(torch.cpu.Stream, "record_event")


NO_FSDP2_ON_CPU = "this torch's FSDP2 does not run on a CPU (torch.cpu.Stream.record_event)"


@dataclass
class RankRun:
    rank: int
    returncode: int | None  # None: killed at the time limit
    stdout: str
    stderr: str

    def last_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else "(no stderr)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_env(rank: int, world_size: int, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
        GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH")))),
    )  # fmt: skip
    return env


def run_ranks(args: list[str], world_size: int = 2, timeout: float = 120.0) -> list[RankRun]:
    """Run ``python *args`` as `world_size` ranks; each rank's exit code and output."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        try:
            for rank in range(world_size):
                out = open(Path(tmp) / f"{rank}.out", "w")  # noqa: SIM115 - closed below
                err = open(Path(tmp) / f"{rank}.err", "w")  # noqa: SIM115 - closed below
                proc = subprocess.Popen(
                    [sys.executable, *args], env=rank_env(rank, world_size, port),
                    stdout=out, stderr=err, cwd=REPO,
                )  # fmt: skip
                procs.append((proc, out, err))
            deadline = time.monotonic() + timeout
            codes: list[int | None] = []
            for proc, _, _ in procs:
                try:
                    codes.append(proc.wait(timeout=max(0.1, deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    codes.append(None)
        finally:
            for proc, out, err in procs:
                if proc.poll() is None:
                    proc.kill()  # this rank's own pid: it hangs or outlived the limit
                    proc.wait()
                out.close()
                err.close()
        return [
            RankRun(
                rank, codes[rank] if rank < len(codes) else None,
                (Path(tmp) / f"{rank}.out").read_text(), (Path(tmp) / f"{rank}.err").read_text(),
            )
            for rank in range(len(procs))
        ]  # fmt: skip


def failure_report(runs: list[RankRun]) -> str:
    """One line per rank that failed: its exit code and the last line of its stderr."""
    return "\n".join(
        f"rank {r.rank}: {_ending(r.returncode)}: {r.last_line()}"
        for r in runs
        if r.returncode != 0
    )


def _ending(returncode: int | None) -> str:
    return "killed at the time limit" if returncode is None else f"exit {returncode}"
