"""examples/fsdp_train_step.py under torchrun (``python -m torch.distributed.run``) with 2
ranks on gloo: each rank writes its log; ``lw.load_ranks`` opens them with their rank, the
step's ops, collectives and placements, and ``LensWidget.from_logs`` shows and compares the
ranks (each rank trained on its own batch: their activations differ)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget.lens_widget import LensWidget

torch_dist = pytest.importorskip("torch.distributed")
if not torch_dist.is_available() or not torch_dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from dist_ranks import NO_FSDP2_ON_CPU, REPO, free_port, fsdp2_runs_on_cpu, rank_env  # noqa: E402

if not fsdp2_runs_on_cpu():
    pytest.skip(NO_FSDP2_ON_CPU, allow_module_level=True)

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

    logs = lw.load_ranks(out)
    assert list(logs) == [0, 1]
    for rank, log in logs.items():
        assert f"rank {rank}/2" in output
        assert (log.rank, log.world_size) == (rank, 2)
        funcs = {op.func for op in log.ops}
        assert {"embedding", "linear", "all_gather_into_tensor", "reduce_scatter_tensor"} <= funcs
        assert not funcs & {"all_gather_copy_in", "split_with_sizes_copy"}
        assert log["model.embed_tokens.weight"].shape == (96, 64)  # its full shape
        gathers = [c for c in log.collectives.values() if c.kind == "all_gather_into_tensor"]
        assert gathers and all(c.engine == "fsdp" and c.group_ranks == (0, 1) for c in gathers)
        assert any("model.embed_tokens.weight" in c.params for c in gathers)  # saved and loaded
        scatters = [c for c in log.collectives.values() if c.kind == "reduce_scatter_tensor"]
        assert scatters and {c.phase for c in scatters} == {"backward"}
        placement = log.placements["model.embed_tokens.weight"]
        assert (placement.full_shape, placement.local_shape) == ((96, 64), (48, 64))
    assert [op.label for op in logs[0].ops] == [op.label for op in logs[1].ops]

    w = LensWidget.from_logs(logs)
    first = next(op.label for op in logs[0].ops if op.func == "embedding")
    _, at_0 = ask(w, "activation", {"id": first, "value": "activation"})
    reply, _ = ask(w, "showRank", {"rank": 1})
    assert reply["ok"] and w.model_log is logs[1]
    _, at_1 = ask(w, "activation", {"id": first, "value": "activation"})
    assert at_0[0] != at_1[0]  # the values served are rank 1's
    w.compare_rank = 0
    diffs = {d.label: d for d in w.comparison}
    assert diffs[first].rel_l2 > 0  # another batch on each rank
    weight = logs[1]["model.embed_tokens.weight"].activation
    assert np.array_equal(weight.numpy(), logs[0]["model.embed_tokens.weight"].activation.numpy())
