"""A log of one rank of a torch.distributed run, saved and loaded: its rank, world size,
collectives, parameter placements and engine calls come back; a file that names a
collective of no op, a rank outside the world, a shard larger than its parameter is
refused; a log without them is written as version 3, as before.

The per-rank logs are made in one process (model_zoo/per_rank.py) with these fields set by
hand, until traces of real gloo runs fill them (the capture side of issue #22)."""

from __future__ import annotations

import pytest
from log_equality import assert_same_log
from saved_files import load_fails, read_doc, tampered

import lens_widget as lw
from lens_widget.log.distributed import CollectiveInfo, EngineCall, ParamPlacement
from lens_widget.store.format import FORMAT_VERSION
from model_zoo.per_rank import data_parallel_logs, tensor_parallel_logs


@pytest.fixture(scope="module")
def rank1() -> lw.ModelLog:
    log = tensor_parallel_logs()[1]
    log.engine_calls.append(EngineCall("dtensor", "view_as", "fc2", "forward", 256))
    return log


def test_a_ranks_fields_survive_save_and_load(tmp_path, rank1):
    rank1.save(tmp_path / "rank1")
    loaded = lw.load(tmp_path / "rank1")
    assert_same_log(rank1, loaded)  # nodes, values, and the distributed fields below
    assert (loaded.rank, loaded.world_size) == (1, 2)
    (label,) = loaded.collectives
    assert loaded.by_label[label].func == "add"
    reduce = CollectiveInfo("all_reduce", (0, 1), 256, "forward", "dtensor")
    assert loaded.collectives[label] == reduce
    assert loaded.collectives[label].group_size == 2
    assert loaded.placements["fc2.weight"] == ParamPlacement(
        (16, 16), (16, 8), ("Shard(dim=1)",), (2,), ("tp",), "local shard"
    )
    assert loaded.engine_calls == [EngineCall("dtensor", "view_as", "fc2", "forward", 256)]
    assert read_doc(tmp_path / "rank1")["version"] == 4


def test_a_rank_alone_survives_and_a_plain_log_stays_version_3(tmp_path):
    log = data_parallel_logs()[0]
    log.save(tmp_path / "dp")
    loaded = lw.load(tmp_path / "dp")
    assert (loaded.rank, loaded.world_size, loaded.collectives) == (0, 2, {})
    log.rank = log.world_size = None
    log.save(tmp_path / "plain")
    document = read_doc(tmp_path / "plain")
    assert document["version"] == 3 and "distributed" not in document  # readers of 3 open it
    assert lw.load(tmp_path / "plain").rank is None


def _distributed(change):
    return lambda document: change(document["distributed"])


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


def _first(key, field, value):
    return lambda d: d[key][0].__setitem__(field, value)


BAD = [
    ("rank outside world", _set("rank", 2), r".rank: rank 2 is not below world_size 2"),
    ("negative rank", _set("rank", -1), r".rank: -1 is less than 0"),
    ("world of 0", _set("world_size", 0), r"world_size: 0 is less than 1"),
    ("rank as text", _set("rank", "1"), r".rank: .1. is not an integer"),
    (
        "collective of no op",
        _first("collectives", "label", "nowhere_9"),
        r"collectives\[0\]: label 'nowhere_9' is not an op of the log",
    ),
    (
        "collective on a source",
        _first("collectives", "label", "input.0"),
        r"label 'input.0' is not an op",
    ),
    (
        "rank outside world in a group",
        _first("collectives", "group_ranks", [0, 5]),
        r"group_ranks \[0, 5\]: a rank not below world_size 2",
    ),
    ("repeated rank", _first("collectives", "group_ranks", [1, 1]), r"repeats a rank"),
    ("negative bytes", _first("collectives", "nbytes", -4), r"nbytes: -4 is less than 0"),
    ("unknown phase", _first("collectives", "phase", "later"), r"phase: 'later' is not one of"),
    ("unknown field", _first("collectives", "extra", 1), r"unknown field\(s\) 'extra'"),
    (
        "shard larger than its parameter",
        _first("placements", "local_shape", [32, 8]),
        r"placements\[0\]: local_shape \[32, 8\] is not a shard of full_shape \[16, 8\]",
    ),
    (
        "placements not one per mesh dim",
        _first("placements", "placements", ["Shard(dim=0)", "Replicate()"]),
        r"one per mesh dim",
    ),
    ("mesh of size 0", _first("placements", "mesh_shape", [0]), r"mesh_shape\[0\]: 0 is less"),
    ("engine call phase", _first("engine_calls", "phase", 3), r"phase: 3 is not one of"),
]


@pytest.mark.parametrize(("change", "match"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_distributed_field_is_refused_clearly(tmp_path, rank1, change, match):
    rank1.save(tmp_path / "rank1")
    tampered(tmp_path / "rank1", _distributed(change))
    load_fails(tmp_path / "rank1", r"log.json(: |\.)distributed.*" + match)


def test_a_collective_described_twice_is_refused(tmp_path, rank1):
    rank1.save(tmp_path / "rank1")
    tampered(
        tmp_path / "rank1",
        _distributed(lambda d: d["collectives"].append(dict(d["collectives"][0]))),
    )
    load_fails(tmp_path / "rank1", r"collectives\[1\]: op 'add_1_4' is described twice")


def test_a_newer_reader_is_needed_for_a_newer_version(tmp_path, rank1):
    rank1.save(tmp_path / "rank1")
    newer = FORMAT_VERSION + 1
    tampered(tmp_path / "rank1", lambda d: d.__setitem__("version", newer))
    load_fails(
        tmp_path / "rank1", rf"format version {newer}, newer than the {FORMAT_VERSION} this lens"
    )
