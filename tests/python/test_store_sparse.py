"""Sparse COO tensors in a log (an Embedding(sparse=True) gradient, a sparse input): their
statistics are those of their dense values; saved as their indices and values, loaded
equal; a tampered sparse entry is one clear LogFormatError."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from log_equality import assert_same_log
from saved_files import load_fails, tampered
from torch import nn

import lens_widget as lw

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")


class SparseMatmul(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 2))

    def forward(self, adjacency: torch.Tensor) -> torch.Tensor:
        return torch.mm(adjacency, self.weight).relu()


def _adjacency() -> torch.Tensor:
    indices = torch.tensor([[0, 1, 2, 2], [1, 0, 2, 0]])
    return torch.sparse_coo_tensor(indices, torch.tensor([1.0, 2.0, 3.0, 4.0]), (3, 3))


def _sparse_grad_log() -> lw.ModelLog:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 4, sparse=True), nn.Flatten(), nn.Linear(12, 1))
    return lw.trace(model.train(), torch.tensor([[1, 2, 2]]), backward=lambda out: out.sum())


def test_a_sparse_gradient_round_trips(tmp_path):
    log = _sparse_grad_log()
    assert log["0.weight"].grad.layout == torch.sparse_coo
    log.save(tmp_path / "emb")
    loaded = lw.load(tmp_path / "emb")
    assert_same_log(log, loaded)
    grad = loaded["0.weight"].grad
    assert grad.layout == torch.sparse_coo
    assert torch.equal(grad.to_dense(), log["0.weight"].grad.to_dense())
    assert loaded.validate().checked == len(log.ops)


@pytest.mark.parametrize("coalesce", [False, True])
def test_a_sparse_input_round_trips_and_replays(tmp_path, coalesce):
    adjacency = _adjacency().coalesce() if coalesce else _adjacency()
    log = lw.trace(SparseMatmul(), adjacency)
    log.save(tmp_path / "graph")
    loaded = lw.load(tmp_path / "graph")
    assert_same_log(log, loaded)
    assert loaded["input.0"].activation.is_coalesced() == coalesce
    assert loaded.validate().checked == len(log.ops)


def test_a_sparse_input_has_the_stats_of_its_dense_values():
    log = lw.trace(SparseMatmul(), _adjacency())
    stats = log["input.0"].stats
    assert (stats.numel, stats.max, stats.min) == (9, 4.0, 0.0)
    assert stats.zero_fraction == pytest.approx(5 / 9)
    assert "input.0" in str(log)


def _sparse_entry(document: dict) -> dict:
    return next(t for t in document["tensors"] if "sparse_coo" in t)


@pytest.fixture
def saved(tmp_path) -> Path:
    lw.trace(SparseMatmul(), _adjacency()).save(tmp_path / "graph")
    return tmp_path / "graph"


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda e: e.update(sparse_coo=[0, 99]), "only earlier entries"),
        (lambda e: e.update(sparse_coo=[0]), "is not a pair"),
        (lambda e: e.update(shape=[2, 3]), "not a valid sparse tensor"),  # an index outside
        (lambda e: e.update(shape=[3]), "do not make shape"),
        (lambda e: e.update(dtype="float64"), "sparse values are torch.float32"),
        (lambda e: e.update(coalesced=True), "not a valid sparse tensor"),  # it is not
        (lambda e: e.update(stride=[1]), "unknown field"),
        (lambda e: e.pop("coalesced"), "missing field"),
    ],
)
def test_a_tampered_sparse_entry_is_a_clear_error(saved, change, match):
    tampered(saved, lambda document: change(_sparse_entry(document)))
    load_fails(saved, match)


def test_sparse_values_named_as_indices_is_a_clear_error(saved):
    def swap(document: dict) -> None:
        entry = _sparse_entry(document)
        entry["sparse_coo"] = entry["sparse_coo"][::-1]

    tampered(saved, swap)
    load_fails(saved, "indices must be int64")
