"""LensWidget.from_logs: the logs of one distributed step in one widget. Switching the rank
changes the values every request answers; comparing two ranks gives each op's relative
difference, as LensWidget.compare does; a collective travels with its group and bytes and
colors by "commBytes".

The per-rank logs here are made in one process (model_zoo/per_rank.py, their rank, world
size and collective set by hand), so that each case controls what differs between ranks;
test_distributed_example.py opens the logs of real gloo ranks the same way."""

from __future__ import annotations

import math

import numpy as np
import pytest
import traitlets
from test_widget_overlays import values_of
from widget_replies import ask

import lens_widget as lw
from lens_widget.widget import wire
from lens_widget.widget.lens_widget import LensWidget
from model_zoo.per_rank import data_parallel_logs, tensor_parallel_logs


@pytest.fixture(scope="module")
def dp_logs() -> dict[int, lw.ModelLog]:
    return data_parallel_logs()


@pytest.fixture(scope="module")
def tp_logs() -> dict[int, lw.ModelLog]:
    return tensor_parallel_logs()


def activation(widget: LensWidget, label: str, value: str = "activation") -> np.ndarray:
    reply, buffers = ask(widget, "activation", {"id": label, "value": value})
    assert reply["ok"], reply
    return np.frombuffer(buffers[0], "<f4")


def test_switching_the_rank_serves_that_ranks_values(dp_logs):
    w = LensWidget.from_logs({1: dp_logs[1], 0: dp_logs[0]})
    assert w.rank == 0 and w.graph["ranks"] == {
        "ranks": [0, 1], "worldSize": 2, "shown": 0, "compareWith": None
    }  # fmt: skip
    layout = [n["id"] for n in w.graph["unrolled"]["nodes"]]
    at_0 = activation(w, "linear_1_1")
    grad_0 = activation(w, "linear_1_1", "grad")
    reply, _ = ask(w, "showRank", {"rank": 1})
    assert reply["ok"], reply
    assert w.rank == 1 and w.model_log is dp_logs[1] and w.graph["ranks"]["shown"] == 1
    assert [n["id"] for n in w.graph["unrolled"]["nodes"]] == layout  # the same graph
    at_1 = activation(w, "linear_1_1")
    assert not np.array_equal(at_0, at_1)  # another batch
    assert np.allclose(at_1, dp_logs[1].by_label["linear_1_1"].activation.numpy().ravel())
    assert not np.array_equal(grad_0, activation(w, "linear_1_1", "grad"))  # its gradients too
    shown_1 = w.graph["unrolled"]
    w.rank = 0  # from Python as well
    assert np.array_equal(activation(w, "linear_1_1"), at_0)
    w.rank = 1
    assert w.graph["unrolled"] is shown_1  # each rank's graph is built once
    assert wire.decode(wire.encode(w.graph))["ranks"]["shown"] == 1  # travels on the wire


def test_data_parallel_ranks_differ_in_every_activation_not_in_weights(dp_logs):
    w = LensWidget.from_logs(dp_logs)
    reply, _ = ask(w, "showRank", {"rank": 0, "compareWith": 1})
    assert reply["ok"], reply
    assert w.graph["ranks"]["compareWith"] == 1 and w.graph["compare"] == {
        "onlyA": [], "onlyB": []
    }  # fmt: skip
    assert w.comparison is not None and w.comparison.b is dp_logs[1]
    rel = values_of(*ask(w, "metrics", {"metric": "relL2"}))
    assert set(rel) == {op.label for op in dp_logs[0].ops}
    assert all(v > 1e-3 for v in rel.values()), rel  # each rank's own batch, all the way down
    # the weights are the same: the inspector's A − B of a parameter is zero
    reply, buffers = ask(w, "activation", {"id": "fc1.weight", "side": "diff"})
    assert reply["ok"] and not np.frombuffer(buffers[0], "<f4").any()
    reply, _ = ask(w, "showRank", {"rank": 1})  # no compareWith: the comparison ends
    assert "compare" not in w.graph and w.comparison is None
    w.compare_rank = 1  # the rank shown itself: no comparison either
    assert "compare" not in w.graph and w.graph["ranks"]["compareWith"] is None


def test_tensor_parallel_ranks_differ_in_their_shards_until_the_all_reduce(tp_logs):
    w = LensWidget.from_logs(tp_logs)
    w.compare_rank = 1
    rel = values_of(*ask(w, "metrics", {"metric": "relL2"}))
    before = ["linear_1_1", "relu_1_2", "linear_2_3"]  # on this rank's shard of fc1, fc2
    after = ["add_1_4", "relu_2_5", "linear_3_6"]  # the all_reduce and what follows
    assert all(rel[label] > 0.1 for label in before), rel
    assert all(rel[label] == 0 for label in after), rel


def test_a_collective_travels_with_its_group_and_bytes(tp_logs):
    w = LensWidget.from_logs(tp_logs)
    for view in ("unrolled", "rolled"):
        marked = {n["id"]: n["collective"] for n in w.graph[view]["nodes"] if "collective" in n}
        assert marked == {
            "add_1_4": {
                "kind": "all_reduce", "groupRanks": [0, 1], "nbytes": 256, "phase": "forward",
                "engine": "dtensor",
            }
        }, view  # fmt: skip
    sent = values_of(*ask(w, "metrics", {"metric": "commBytes"}))
    assert sent["add_1_4"] == 256
    assert all(math.isnan(v) for label, v in sent.items() if label != "add_1_4")


def test_a_sharded_parameter_travels_with_its_placement(tp_logs):
    w = LensWidget.from_logs(tp_logs)
    for view in ("unrolled", "rolled"):
        placed = {n["id"]: n["placement"] for n in w.graph[view]["nodes"] if "placement" in n}
        assert set(placed) == {"fc1.weight", "fc1.bias", "fc2.weight"}, view  # fc3: replicated
        assert placed["fc2.weight"] == {
            "fullShape": [16, 16], "localShape": [16, 8], "placements": ["Shard(dim=1)"],
            "meshShape": [2], "meshDimNames": ["tp"], "grad": "local shard",
        }  # fmt: skip


def test_comm_bytes_of_a_log_without_collectives_says_why(dp_logs):
    reply, _ = ask(LensWidget.from_log(dp_logs[0]), "metrics", {"metric": "commBytes"})
    assert not reply["ok"] and "no op of this log is a collective" in reply["error"]


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"rank": 5}, "rank 5: the ranks shown are [0, 1]"),
        ({"rank": True}, "rank True"),
        ({"rank": 0, "compareWith": "1"}, "compareWith '1'"),
        ({}, "missing params: rank"),
        ({"rank": 0, "other": 1}, "unknown params: other"),
    ],
)
def test_bad_show_rank_requests_are_refused(dp_logs, params, error):
    w = LensWidget.from_logs(dp_logs)
    reply, _ = ask(w, "showRank", params)
    assert not reply["ok"] and error in reply["error"], reply
    assert w.rank == 0 and w.model_log is dp_logs[0]


def test_a_widget_of_one_log_has_no_ranks(dp_logs):
    w = LensWidget.from_log(dp_logs[0])
    assert "ranks" not in w.graph and w.rank == -1 and w.rank_logs is None
    reply, _ = ask(w, "showRank", {"rank": 0})
    assert not reply["ok"] and "shows one log" in reply["error"]
    with pytest.raises(traitlets.TraitError, match="make it with from_logs"):
        w.rank = 1
    with pytest.raises(traitlets.TraitError, match=r"rank 3: the ranks shown are \[0, 1\]"):
        LensWidget.from_logs(dp_logs).rank = 3
    with pytest.raises(ValueError, match="at least one rank"):
        LensWidget.from_logs({})
    with pytest.raises(TypeError, match="ranks are integers"):
        LensWidget.from_logs({"0": dp_logs[0]})
