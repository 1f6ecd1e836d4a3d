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
