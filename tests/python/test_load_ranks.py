"""lw.load_ranks(dir): the per-rank logs of one step, by rank; each way a directory can be
wrong is refused with a message naming the folders, a missing rank is a warning.

The logs are made in one process (model_zoo/per_rank.py, rank and world size set by hand)
until the capture side of issue #22 traces real gloo ranks."""

from __future__ import annotations

import warnings

import pytest

import lens_widget as lw
from model_zoo.per_rank import data_parallel_logs


@pytest.fixture(scope="module")
def logs() -> dict[int, lw.ModelLog]:
    return data_parallel_logs(world_size=3)


def save_ranks(root, logs, names=None) -> None:
    for rank, log in logs.items():
        log.save(root / (names or {}).get(rank, f"rank{rank}"))


def test_the_logs_of_a_step_come_back_by_rank(tmp_path, logs):
    # folder names do not decide the rank, and are read in any order
    save_ranks(tmp_path, logs, {0: "b-host", 1: "a-host", 2: "rank2"})
    (tmp_path / "notes.txt").write_text("not a log")
    (tmp_path / "empty").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = lw.load_ranks(tmp_path)
    assert list(loaded) == [0, 1, 2]
    for rank, log in loaded.items():
        assert (log.rank, log.world_size) == (rank, 3)
        first = log.by_label["linear_1_1"].activation
        assert first.equal(logs[rank].by_label["linear_1_1"].activation)


def test_an_empty_directory_says_what_it_expects(tmp_path):
    (tmp_path / "rank0").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no saved log in the subfolders of .*rank0/"):
        lw.load_ranks(tmp_path)
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        lw.load_ranks(tmp_path / "nowhere")


def test_a_log_without_a_rank_is_refused(tmp_path, logs):
    save_ranks(tmp_path, {0: logs[0]})
    logs[1].rank = None  # as traced outside torch.distributed
    try:
        logs[1].save(tmp_path / "rank1")
    finally:
        logs[1].rank = 1
    with pytest.raises(ValueError, match=r"rank1: this log has no rank"):
        lw.load_ranks(tmp_path)


def test_two_logs_of_one_rank_are_refused(tmp_path, logs):
    save_ranks(tmp_path, {0: logs[0], 1: logs[1]})
    logs[1].save(tmp_path / "rank1-again")
    with pytest.raises(ValueError, match=r"rank1 and .*rank1-again are both logs of rank 1"):
        lw.load_ranks(tmp_path)


def test_logs_of_different_worlds_are_refused(tmp_path, logs):
    other = data_parallel_logs(world_size=2)[1]
    save_ranks(tmp_path, {0: logs[0], 1: other})
    with pytest.raises(ValueError, match=r"disagree on the world size \(rank0: 3, rank1: 2\)"):
        lw.load_ranks(tmp_path)


def test_a_missing_rank_warns_and_the_others_load(tmp_path, logs):
    save_ranks(tmp_path, {0: logs[0], 2: logs[2]})
    with pytest.warns(lw.MissingRanksWarning, match=r"no log of rank\(s\) \[1\] of a world of 3"):
        loaded = lw.load_ranks(tmp_path)
    assert list(loaded) == [0, 2]
