"""What a standalone page answers beside activations (the kinds protocol.REQUEST_KINDS marks
`on_page`): every overlay metric and the first NaN/Inf, answered here by the widget's own
request functions (at full precision, not from the page's pooled views) and embedded, so
the page's color-by picker and "first NaN/Inf" work with no kernel; and the inspector's
call of each op (its arguments, the whole source statement) and module facts, up to
MAX_DETAILS ops (gzip makes their repeated names cheap).

A metric the log cannot give (no comparison, no gradients, nothing saved) is embedded as
the kernel's own error text: the page says the same thing the notebook would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from lens_widget.compare.comparison import OpDiff
from lens_widget.log.model_log import ModelLog
from lens_widget.log.nonfinite import nonfinite_reach
from lens_widget.widget import requests
from lens_widget.widget.metric_values import METRICS
from lens_widget.widget.module_view import module_details

# The ops whose call a page embeds at most (a 100,000-op trace's would crowd out its values).
MAX_DETAILS = 5000


@dataclass
class PageAnswers:
    """`meta` travels as JSON in the page ("ids" of the ops, per metric the offset of its
    values or the error text, "firstNonfinite"); `values` are every metric's float32
    values, one per op in "ids" order, appended to the page's values block."""

    meta: dict[str, Any]
    values: torch.Tensor

    def at(self, offset: int) -> PageAnswers:
        """The same answers with value offsets counted from `offset` (where they land)."""
        metrics = {
            name: where + offset if isinstance(where, int) else where
            for name, where in self.meta["metrics"].items()
        }
        return PageAnswers({**self.meta, "metrics": metrics}, self.values)


def page_answers(log: ModelLog, diffs: Mapping[str, OpDiff] | None = None) -> PageAnswers:
    """The metrics and first-NaN answers of `log` (`diffs`: a comparison's, for its metrics)."""
    metrics: dict[str, int | str] = {}
    chunks: list[torch.Tensor] = []
    offset = 0
    # Asked as the page's frontend would ask a kernel, through the widget's own answers.
    for name in METRICS:
        try:
            _, (data,) = requests.metrics(log, {"metric": name}, diffs)
        except requests.RequestError as err:
            metrics[name] = str(err)
            continue
        values = torch.frombuffer(bytearray(data), dtype=torch.float32) if data else torch.zeros(0)
        metrics[name] = offset
        chunks.append(values)
        offset += values.numel()
    try:
        first: object = requests.first_nonfinite(log, {})[0]
    except requests.RequestError as err:
        first = {"error": str(err)}
    meta = {
        "ids": [op.label for op in log.ops],
        "metrics": metrics,
        "firstNonfinite": first,
        **_details(log),
    }
    values = torch.cat(chunks) if chunks else torch.zeros(0)
    return PageAnswers(meta, values)


def _details(log: ModelLog) -> dict[str, Any]:
    """The "opDetails" answer of every op and output (none past MAX_DETAILS) and the
    "moduleDetails" answer of every module (without the model: no constructor settings)."""
    nodes = [n for n in log.nodes if n.kind in ("op", "output")]
    if len(nodes) > MAX_DETAILS:
        return {"detailsLeftOut": f"this page holds the calls of up to {MAX_DETAILS:,} ops"}
    reach = nonfinite_reach(log.nodes)  # once, not once per op with a NaN/Inf
    ops = {n.label: requests.op_details(log, {"id": n.label}, reach)[0] for n in nodes}
    totals = log.module_totals
    modules = {a: module_details(log, a, None, totals) for a in log.modules}
    return {"opDetails": ops, "moduleDetails": modules}
