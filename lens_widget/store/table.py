"""log.to_pandas(): one row per node, for filtering, grouping and sorting."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from lens_widget.log.records import OpRecord
from lens_widget.store.optional import require

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "label", "kind", "func", "module", "pass", "n_passes", "layer", "shape", "dtype", "device",
    "bytes", "params", "parents", "children", "source", "saved", "inplace", "failed", "function",
)  # fmt: skip


def nodes_table(nodes: list[OpRecord]) -> pd.DataFrame:
    """A DataFrame indexed by position, one row per node (sources, ops, outputs)."""
    pandas = require("pandas", "pandas")
    return pandas.DataFrame([_row(node) for node in nodes], columns=list(COLUMNS))


def _row(node: OpRecord) -> dict[str, Any]:
    return {
        "label": node.label,
        "kind": node.kind,
        "func": node.func,
        "module": node.module,
        "pass": node.pass_index,
        "n_passes": node.n_passes,
        "layer": node.layer,
        "shape": node.shape,
        "dtype": node.dtype,
        "device": node.device,
        "bytes": node.nbytes,
        "params": _parameter_count(node),
        "parents": list(node.parents),
        "children": list(node.children),
        "source": node.source,
        "saved": node.activations is not None,
        "inplace": node.inplace,
        "failed": node.failed,
        "function": node.function,
    }


def _parameter_count(node: OpRecord) -> int:
    """Elements of the parameters and buffers an op reads directly; a param node its own."""
    if node.kind in ("param", "buffer"):
        return math.prod(node.shape) if node.shape is not None else 0
    return sum(p.numel for p in node.params)
