"""Re-running a LensWidget's model: `rerun` (trace again, saving more), `ablate` (trace
again with an op's output zeroed or replaced by its mean, shown as a comparison) and their
requests ("rerun", "ablate", "endAblation").

A mixin of LensWidget (its request handlers are found by name, like the others). Every
re-run starts from the RNG state and buffers of the widget's first trace and puts the present
ones back (capture/rerun.py), so it reproduces the pass the user is looking at.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

from lens_widget.capture.interventions.interventions import InterventionFn
from lens_widget.capture.rerun import WorldState, save_also
from lens_widget.capture.save_policy import SaveSpec
from lens_widget.capture.trace import trace
from lens_widget.compare.comparison import LogComparison, OpDiff, compare
from lens_widget.log.attention import has_attention_map
from lens_widget.log.model_log import ModelLog
from lens_widget.log.records import OpRecord
from lens_widget.widget import requests
from lens_widget.widget.ablation import Ablation, ablation_request
from lens_widget.widget.call_sites import keep_call_sites
from lens_widget.widget.dim_names import DimNames
from lens_widget.widget.view_ids import ViewIds

_NO_MODEL_TO_ABLATE = (
    "this widget was built from a log: there is no model to re-run with the ablation"
)


class ModelReruns:
    """What LensWidget adds to trace its model again (none for a widget built from a log)."""

    # LensWidget's, set in its constructor and by _set_log
    _model: torch.nn.Module | None
    _inputs: Any
    _kwargs: dict[str, Any]
    _save: SaveSpec
    _timing: bool
    _offload: dict[str, Any]  # trace's offload= and memory_budget=
    _extra_save: list[str]
    _initial: WorldState | None
    _ablation: Ablation | None
    _comparison: LogComparison | None
    _diffs: dict[str, OpDiff] | None
    _model_log: ModelLog
    _records: Mapping[str, OpRecord]
    _dim_names: DimNames
    _view_ids: ViewIds
    status: Any  # LensWidget's synced traits
    view: Any
    _set_log: Any  # LensWidget's: show a log (its payload, the ids of its views)

    def _trace(
        self, save: SaveSpec, intervene: Mapping[str, InterventionFn] | None = None
    ) -> ModelLog:
        assert self._model is not None
        model, inputs, kwargs, timing = self._model, self._inputs, self._kwargs, self._timing
        offload = self._offload
        if intervene is not None:  # an ablation: a failing pass is an error, not a view
            return trace(
                model, inputs, kwargs, save=save, timing=timing, intervene=intervene, **offload
            )
        try:
            return trace(model, inputs, kwargs, save=save, timing=timing, **offload)
        except Exception as err:
            partial = getattr(err, "lens_log", None)
            # Nothing ran (bad inputs, or a failure before the first op): an empty graph
            # would hide the real error, so raise it as a plain call would.
            if partial is None or not partial.ops:
                raise
            # Show what ran up to the failure instead of losing the whole graph.
            warnings.warn(
                f"the forward pass raised {type(err).__name__}: {err}; showing the partial trace",
                RuntimeWarning,
                stacklevel=3,
            )
            return partial

    def rerun(self, node_id: str | None = None) -> None:
        """Trace the model again, also saving `node_id`'s activation (labels are stable).

        `node_id` is an op label, or a rolled-view layer id to save every pass of it.
        """
        if self._model is None:
            raise RuntimeError("this widget was built from a log; there is no model to re-run")
        if node_id is not None:
            rolled_ids = self._view_ids.ids["rolled"]
            label = requests.rerun_target(self._records, {"id": node_id}, rolled_ids)
            labels = self._rolled_targets().get(label, [label])  # every pass of a rolled node
            for name in (*labels, *(n for lb in labels for n in self._attention_inputs(lb))):
                if name not in self._extra_save:
                    self._extra_save.append(name)
        self.status = "re-running the model…"
        try:
            log = self._replay()
        finally:
            self.status = ""
        self._show_ablation(None, None)  # the clean run changed: back to the plain trace
        self._set_log(log)

    def _rolled_targets(self) -> Mapping[str, list[str]]:
        """Rolled node -> its passes' labels, for the ids that name one: every rolled node
        while the rolled view is shown; otherwise those that are no op's label (a layer
        that ran several times), since the unrolled view names single ops."""
        passes = self._view_ids.rolled_passes
        if self.view == "rolled":
            return passes
        return {k: v for k, v in passes.items() if k not in self._records}

    def ablate(self, target: str, kind: str = "zero", dim: int | None = None) -> None:
        """Re-trace with op `target`'s output zeroed (`kind="zero"`) or replaced by its mean
        over `dim` (`kind="mean"`), and show the comparison clean (A) vs ablated (B), as
        `LensWidget.compare` does. `target` is an op label, or a rolled layer (every pass).
        `end_ablation()` goes back to the plain trace; the model, RNG and buffers come out
        as they were."""
        if self._model is None:
            raise RuntimeError(_NO_MODEL_TO_ABLATE)
        params: dict[str, object] = {"id": target, "kind": kind}
        if dim is not None:
            params["dim"] = dim
        ablation = ablation_request(self._records, self._rolled_targets(), self._dim_names, params)
        clean = self._model_log
        self.status = f"ablating {ablation.target}…"
        try:
            ablated = self._replay({label: ablation.function() for label in ablation.passes})
            comparison = compare(clean, ablated)
        finally:
            self.status = ""
        self._show_ablation(ablation, comparison)
        self._set_log(clean)

    def end_ablation(self) -> None:
        """Back from an ablation's comparison to the plain trace."""
        if self._ablation is not None:
            self._show_ablation(None, None)
            self._set_log(self._model_log)

    @property
    def ablation(self) -> Ablation | None:
        """The ablation shown (`ablate`), else None."""
        return self._ablation

    def _show_ablation(self, ablation: Ablation | None, comparison: LogComparison | None) -> None:
        # only a widget with a model ablates, and its comparison is only ever an ablation's
        self._ablation = ablation
        self._comparison = comparison
        self._diffs = {d.label: d for d in comparison} if comparison is not None else None

    def _attention_inputs(self, target: str) -> list[str]:
        """Ops feeding an attention op (or layer): its maps are computed from them."""
        if target in self._records:
            records = [self._records[target]]
        else:
            records = [r for r in self._records.values() if r.layer == target]
        return [
            parent
            for r in records
            if has_attention_map(r)
            for parent in r.parents
            if self._records[parent].kind == "op"
        ]

    def _replay(self, intervene: Mapping[str, InterventionFn] | None = None) -> ModelLog:
        """Trace again from the initial RNG state and buffers, then put the present ones back."""
        assert self._model is not None and self._initial is not None
        current = WorldState.capture(self._model)
        self._initial.restore(self._model)
        try:
            with self._initial.grad_context():  # as the first trace ran (fast paths)
                log = self._trace(save_also(self._save, self._extra_save), intervene)
        finally:
            current.restore(self._model)
        return keep_call_sites(log, self._model_log)

    def _rerun(self, params: object) -> requests.Answer:
        label = requests.rerun_target(self._records, params, self._view_ids.ids["rolled"])
        if self._model is None:
            raise requests.RequestError("this widget was built from a log; it cannot re-run")
        self.rerun(label)
        return {"ok": True}, []

    def _ablate(self, params: object) -> requests.Answer:
        if self._model is None:
            raise requests.RequestError(_NO_MODEL_TO_ABLATE)
        p = requests.request_params(params, {"id", "kind", "dim"}, {"id", "kind"})
        dim = p.get("dim")
        self.ablate(p["id"], p["kind"], dim)  # pyright: ignore[reportArgumentType]  # checked in ablate
        return {"ok": True}, []

    def _end_ablation(self, params: object) -> requests.Answer:
        requests.no_params(params)
        self.end_ablation()
        return {"ok": True}, []
