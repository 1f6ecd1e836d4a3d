"""Traces of a training step on 2 gloo ranks (subprocesses, dist_ranks.py), under DDP, FSDP2
and tensor parallel, on a 3-layer MLP and a tiny Llama: each rank's model ops equal the
undistributed trace's, the collectives are ops with their group and bytes, parameters are
found by name with their full shape and placement, outputs and ``.grad`` are bit-equal to an
untraced distributed step, and the tracer warns of nothing (dist_worker.py checks each
case; its failures come back here).

All cases run in one launch of the 2 ranks (a process group, torch and transformers are
set up once), a module fixture; each case is its own test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch_dist = pytest.importorskip("torch.distributed")
if not torch_dist.is_available() or not torch_dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from dist_ranks import NO_FSDP2_ON_CPU, failure_report, fsdp2_runs_on_cpu, run_ranks  # noqa: E402

CASES = [
    f"{engine}:{model}" for model in ("mlp3", "llama_small") for engine in ("ddp", "fsdp", "tp")
]
# Two micro-batches under FSDP2: gradients accumulated in place by the engine
ACCUM = "fsdp+accum:mlp3"
# Two micro-batches under DDP, the first under no_sync: one bucket all-reduce per bucket
NO_SYNC = "ddp+nosync:mlp3"
# A traced FSDP2 step that raises: the world is put back; lw.trace of a DDP model
RESTORE = "restore:mlp3"
# The user's own c10d and functional collectives in a traced block
USER = "user:mlp3"
# A DTensor op whose redistribution runs inside DTensor's dispatch
IMPLICIT = "implicit:mlp3"
# Gradient clipping and the optimizer step in the traced block (phase "optimizer")
OPTIM = "optim:mlp3"
ALL_CASES = [*CASES, ACCUM, NO_SYNC, RESTORE, USER, IMPLICIT, OPTIM]
NEEDS_FSDP2 = {c for c in ALL_CASES if c.startswith("fsdp")} | {RESTORE, OPTIM}
RUN_CASES = [c for c in ALL_CASES if fsdp2_runs_on_cpu() or c not in NEEDS_FSDP2]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, list[str]]]:
    out = tmp_path_factory.mktemp("ranks")
    runs = run_ranks(["tests/python/dist_worker.py", str(out), *RUN_CASES], timeout=180)
    report = failure_report(runs)
    assert not report, f"a rank failed:\n{report}"
    return [json.loads((Path(out) / f"rank{r}.json").read_text()) for r in range(2)]


@pytest.mark.parametrize("case", ALL_CASES)
def test_rank_traces_as_one_process(results: list[dict[str, list[str]]], case: str) -> None:
    if case not in RUN_CASES:
        pytest.skip(NO_FSDP2_ON_CPU)
    for rank, by_case in enumerate(results):
        assert case in by_case, f"rank {rank} did not run {case}"
        assert by_case[case] == [], f"rank {rank}, {case}:\n" + "\n".join(by_case[case])
