"""log.to_pandas(): one row per node, the columns a user filters and groups by."""

from __future__ import annotations

import sys

import pytest
import torch

import lens_widget as lw
from lens_widget.store.table import COLUMNS
from model_zoo import TEST_MODELS as BUILDERS

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def log():
    case = BUILDERS["gpt2"]()
    return lw.trace(case.model, case.args, case.kwargs, save=["linear"])


def test_one_row_per_node(log):
    df = log.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df["label"]) == [n.label for n in log.nodes]
    required = {"label", "kind", "func", "module", "pass", "shape", "dtype", "device", "bytes",
                "params", "parents", "children", "source"}  # fmt: skip
    assert required <= set(df.columns) and list(df.columns) == list(COLUMNS)


def test_row_values(log):
    df = log.to_pandas().set_index("label")
    node = next(n for n in log.ops if n.module == "transformer.h.0.attn.c_attn" and n.params)
    row = df.loc[node.label]
    assert row["kind"] == "op" and row["func"] == node.func and row["module"] == node.module
    assert row["pass"] == node.pass_index and row["shape"] == node.shape
    assert row["dtype"] == "float32" and row["device"] == "cpu" and row["bytes"] == node.nbytes
    assert row["params"] == sum(p.numel for p in node.params) > 0
    assert row["parents"] == node.parents and row["children"] == node.children
    assert row["source"] == node.source and row["saved"] == node.saved
    assert df.loc["transformer.wte.weight", "params"] == 96 * 32
    assert df.loc["transformer.wte.weight", "kind"] == "param"


def test_queries_a_user_would_write(log):
    df = log.to_pandas()
    ops = df[df["kind"] == "op"]
    assert len(ops) == len(log.ops)
    per_module = ops.groupby("module")["bytes"].sum()
    assert per_module["transformer.h.1.mlp.c_fc"] == sum(
        n.nbytes for n in log.ops if n.module == "transformer.h.1.mlp.c_fc"
    )
    assert set(df[df["saved"] & (df["kind"] == "op")]["func"]) == {"linear"}


def test_without_pandas_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    log = lw.trace(torch.nn.ReLU(), torch.randn(3))
    with pytest.raises(ImportError, match=r"pip install lens_widget\[pandas\]"):
        log.to_pandas()
