"""Which op produced the first NaN or Inf: the first one whose inputs were all finite."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lens_widget.log.records import OpRecord


class NotSavedError(ValueError):
    """A question about values asked of a log that kept none."""


def first_nonfinite(ops: Sequence[OpRecord], node: Callable[[str], OpRecord]) -> OpRecord | None:
    """The first op, in execution order, with a NaN/Inf in a saved output while every
    tensor it read (parents' outputs, parameters, buffers, constants, inputs) was finite.

    Works from the saved activations (their statistics, computed in one batch). An input
    whose value was not saved cannot be checked and counts as finite, so with a partial
    save the answer is the first *saved* op that turned finite values non-finite.
    None when no op did: all is finite, or the NaN/Inf came in through the inputs or the
    parameters.
    """
    # No ops (a model returning its input): nothing produced a NaN, whatever was saved.
    if ops and not any(op.saved for op in ops):
        if all(op.device == "meta" for op in ops):
            raise NotSavedError("first_nonfinite() needs values: this model ran on the meta device")
        reasons = {op.no_values for op in ops}
        if None not in reasons:  # saved as asked, but no op has values (inside a vmap)
            reason = min(reasons)  # pyright: ignore[reportArgumentType]  # no None in it
            raise NotSavedError(f"first_nonfinite() needs values, and no op has any: {reason}")
        raise NotSavedError(
            "first_nonfinite() needs saved activations and this log kept none (save=None): "
            "trace again with save='all', or save= the ops or modules to look at"
        )
    for op in ops:
        outputs = op.output_stats
        if outputs is None or all(s.finite for s in outputs):
            continue
        if all(_finite(node(arg.parent), arg.output_index) for arg in op.parent_args):
            return op
    return None


def _finite(parent: OpRecord, output_index: int) -> bool:
    stats = parent.output_stats  # sources are checked only here, for candidate ops
    return stats is None or stats[output_index].finite


def nonfinite_reach(nodes: Sequence[OpRecord]) -> dict[str, bool]:
    """For each node (`nodes` in execution order) with a NaN/Inf in a saved output: whether
    those values reach the model's output or a gradient (True), or are masked away later
    (False): T5's relative-position buckets take ``log(0) = -inf`` and turn it back into
    finite bucket numbers, so the output never sees it.

    Non-finite values are followed forward through every child whose own output is
    non-finite; a child whose value was not saved may carry them (counted as reaching, so a
    partial save never hides a real problem). A non-finite gradient reaches by itself.
    """
    OpRecord.compute_stats(nodes)  # one batch, not one host copy per node
    reaches: dict[str, bool] = {}
    carries: dict[str, bool] = {}
    for n in reversed(nodes):
        stats = n.output_stats
        carrying = stats is None or not all(s.finite for s in stats)
        carries[n.label] = carrying
        if not carrying:
            continue
        grads = n.grads or ()
        reached = (
            n.kind == "output"
            or any(g is not None and not bool(g.isfinite().all()) for g in grads)
            or any(carries.get(c, True) and reaches.get(c, True) for c in n.children)
        )
        reaches[n.label] = reached
    return {n.label: reaches[n.label] for n in nodes if n.saved and carries[n.label]}
