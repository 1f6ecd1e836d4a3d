"""Modules that return their input unchanged: `nn.Identity` (the recorder gives the untouched
tensor an "identity" op), `Dropout` in eval or with p=0. Six of a timm ViT's sixteen first-screen
items were such boxes (#36); the graph folds them into the op before them until opened.

Decided from the record alone: every op inside every call of the module is one such op.
"""

from __future__ import annotations

from collections.abc import Iterable

from lens_widget.log.records import OpRecord

_DROPOUTS = frozenset(
    {
        "dropout",
        "dropout_",
        "alpha_dropout",
        "feature_alpha_dropout",
        "dropout1d",
        "dropout2d",
        "dropout3d",
    }
)


def returns_its_input(op: OpRecord) -> bool:
    """Whether `op` hands its one input back unchanged: the recorder's identity, or a dropout
    not training or with p=0 (its call's own arguments say so)."""
    if op.kind != "op" or len(op.parents) != 1:
        return False
    if op.func == "identity":
        return True
    if op.func not in _DROPOUTS or not op.replay or op.replay[0] is None:
        return False
    kwargs = dict(op.replay[0].kwargs)
    args = op.replay[0].args
    p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
    training = kwargs.get("training", args[2] if len(args) > 2 else True)
    return training is False or p == 0


def pass_through_modules(ops: Iterable[OpRecord]) -> set[str]:
    """The addresses of modules each of whose calls ran exactly one op, one returning its
    input (an op ran inside an Identity's call only when the recorder added it)."""
    per_call: dict[tuple[str, int], list[OpRecord]] = {}
    for op in ops:
        for entry in op.module_stack:
            per_call.setdefault(entry, []).append(op)
    verdict: dict[str, bool] = {}
    for (address, _), inside in per_call.items():
        ok = len(inside) == 1 and returns_its_input(inside[0])
        verdict[address] = verdict.get(address, True) and ok
    return {a for a, ok in verdict.items() if ok and a}
