"""examples/fsdp_train_step.py under torchrun (``python -m torch.distributed.run``) with 2
ranks on gloo: each rank writes its log, and each log opens with ``lw.load`` with the
step's ops and collectives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import lens_widget as lw

torch_dist = pytest.importorskip("torch.distributed")
if not torch_dist.is_available() or not torch_dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from dist_ranks import REPO, free_port, rank_env  # noqa: E402

TIMEOUT_S = 180


def test_example_writes_one_loadable_log_per_rank(tmp_path: Path) -> None:
    out = tmp_path / "step"
    env = rank_env(0, 2, free_port())
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        env.pop(name)  # torchrun sets them per rank
    env["CUDA_VISIBLE_DEVICES"] = ""  # gloo on CPU, as CI has it
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
        "--master-addr", "127.0.0.1", "--master-port", env["MASTER_PORT"],
        "examples/fsdp_train_step.py", "--out", str(out),
    ]  # fmt: skip
    # Its own session: on a timeout the launcher and its ranks are killed by its group id.
    proc = subprocess.Popen(
        command, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"torchrun did not finish in {TIMEOUT_S} s:\n{output[-3000:]}")
    lines = [line for line in output.splitlines() if line.strip()]
    assert proc.returncode == 0, f"torchrun failed: {lines[-1] if lines else ''}\n{output[-3000:]}"

    logs = [lw.load(out / f"rank{rank}") for rank in range(2)]
    for rank, log in enumerate(logs):
        assert f"rank {rank}/2" in output
        funcs = {op.func for op in log.ops}
        assert {"embedding", "linear", "all_gather_into_tensor", "reduce_scatter_tensor"} <= funcs
        assert not funcs & {"all_gather_copy_in", "split_with_sizes_copy"}
        assert log["model.embed_tokens.weight"].shape == (96, 64)  # its full shape
    assert [op.label for op in logs[0].ops] == [op.label for op in logs[1].ops]
