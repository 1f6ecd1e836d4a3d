"""Ablations asked for from the inspector (the "ablate" request): which op, zeroed or
replaced by its mean over one dimension.

The request names only the op, the kind and a dim index; each is checked against the log
before anything runs, and the replacement function is built here from that checked request
(no code or names from the frontend are evaluated or looked up beyond the log's own labels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from lens_widget.capture.interventions.interventions import InterventionFn
from lens_widget.log.records import OpRecord
from lens_widget.widget import protocol
from lens_widget.widget.checks import quote, require_int
from lens_widget.widget.dim_names import DimNames, wire_names
from lens_widget.widget.requests import RequestError, node_record, request_params

KINDS = ("zero", "mean")


@dataclass(frozen=True, slots=True)
class Ablation:
    """A checked ablation: `target` is an op label (one pass) or a rolled node (every pass)."""

    target: str
    passes: tuple[str, ...]  # the op labels whose outputs are replaced
    kind: str  # "zero" | "mean"
    dim: int | None  # the dim averaged over ("mean"), None for "zero"
    dim_name: str | None  # what that dim is ("token"), or "dim 2" when nothing names it

    def function(self) -> InterventionFn:
        """The `intervene=` function: same shape and dtype as the output it replaces."""
        if self.kind == "zero":
            return torch.zeros_like
        dim = self.dim
        assert dim is not None

        def mean_over_dim(t: torch.Tensor) -> torch.Tensor:
            return t.mean(dim=dim, keepdim=True).expand_as(t).contiguous()

        return mean_over_dim

    def describe(self) -> str:
        every = f" (all {len(self.passes)} passes)" if len(self.passes) > 1 else ""
        if self.kind == "zero":
            return f"{self.target}{every} zeroed"
        return f"{self.target}{every} replaced by its mean over {self.dim_name}"

    def info(self) -> protocol.AblationInfo:
        """What the frontend's banner shows."""
        return {
            "target": self.target,
            "kind": "zero" if self.kind == "zero" else "mean",
            "dim": self.dim,
            "dimName": self.dim_name,
            "text": self.describe(),
        }


def ablation_request(
    records: Mapping[str, OpRecord],
    rolled: Mapping[str, Sequence[str]],
    dim_names: DimNames,
    params: object,
) -> Ablation:
    """The checked ablation of an "ablate" request, or RequestError saying what is wrong.
    `rolled`: the rolled nodes an id names (-> their passes' labels): every pass of one is
    ablated, those of a folded repeated block included."""
    p = request_params(params, {"id", "kind", "dim"}, {"id", "kind"})
    node_id = p["id"]
    if isinstance(node_id, str) and node_id in rolled:
        passes = [records[label] for label in rolled[node_id]]
    else:
        passes = [node_record(records, node_id)]
    target = str(node_id)
    labels = tuple(record.label for record in passes)
    for record in passes:
        if record.kind != "op":
            raise RequestError(f"{record.label} is a {record.kind}: only ops can be ablated")
        if record.failed:
            raise RequestError(f"{record.label} raised in the forward pass: it has no output")
        if not record.shapes and record.shape is None:
            raise RequestError(f"{record.label} has no tensor output to ablate")
    kind = p["kind"]
    if kind not in KINDS:
        raise RequestError(f"kind must be one of {', '.join(KINDS)}, got {quote(kind, 40)}")
    if kind == "zero":
        if "dim" in p:
            raise RequestError("dim is only for kind 'mean'")
        return Ablation(target, labels, "zero", None, None)
    if "dim" not in p:
        raise RequestError("kind 'mean' needs dim: the dimension to average over")
    first = passes[0]
    ranks = {len(_first_shape(r)) for r in passes}
    if len(ranks) > 1:
        raise RequestError(f"the passes of {target} differ in rank: ablate one pass")
    rank = ranks.pop()
    dtype = getattr(torch, first.dtype or "", None)
    if not isinstance(dtype, torch.dtype) or not (dtype.is_floating_point or dtype.is_complex):
        raise RequestError(f"{first.label} outputs {first.dtype}: only a float output has a mean")
    try:
        dim = require_int("dim", p["dim"])
    except ValueError as e:
        raise RequestError(str(e)) from e
    if not -rank <= dim < rank:  # negative counts from the end, as in torch
        raise RequestError(
            f"dim {dim} out of range [-{rank}, {rank}) ({first.label} has {rank} dims)"
        )
    dim %= rank
    name = wire_names(dim_names.of(first.label, 0) or ("",) * rank)[dim]
    return Ablation(target, labels, "mean", dim, name)


def _first_shape(record: OpRecord) -> tuple[int, ...]:
    if record.shapes:
        return record.shapes[0]
    return record.shape or ()
