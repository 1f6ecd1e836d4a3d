"""What the module inspector says of one module ("moduleDetails"): its class, constructor
settings (``extra_repr``: a Conv2d's stride and padding), parameters, the totals of the ops
inside it (FLOPs, time, bytes), its passes and the nodes that produced its output.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from lens_widget.log.model_log import ModelLog
from lens_widget.log.totals import ModuleTotals
from lens_widget.widget import protocol
from lens_widget.widget.checks import cut, quote

# The most parameters listed (a root module of a big model has hundreds).
MAX_PARAMS = 200
MAX_EXTRA_REPR = 2000


class UnknownModule(LookupError):
    """An address that is no module of the log."""


def module_details(
    log: ModelLog,
    address: object,
    model: torch.nn.Module | None,
    totals: Mapping[str, ModuleTotals] | None = None,
) -> protocol.ModuleDetailsResult:
    """The facts of module `address` ("" is the model itself); `model` (None for a widget
    built from a log) gives the constructor settings and the parameters no op read;
    `totals`: `log.module_totals` (computed once per log), as it is by default."""
    if not isinstance(address, str):
        raise UnknownModule(f"address must be a string, got {type(address).__name__}")
    info = log.modules.get(address)
    if info is None:
        raise UnknownModule(f"no module {quote(address)} ran in this trace")
    total = (totals if totals is not None else log.module_totals)[address]
    module = _submodule(model, address)
    parameters = _parameters(log, address, module)
    outputs = [labels[0] for _, labels in sorted(info.outputs.items()) if labels]
    return {
        "address": address,
        "className": info.class_name,
        "extraRepr": cut(module.extra_repr(), MAX_EXTRA_REPR) if module is not None else None,
        "parameters": parameters[:MAX_PARAMS],
        "nParams": sum(p["numel"] for p in parameters),
        "nOps": total.n_ops,
        "nPasses": info.n_passes,
        "flops": total.flops,
        "timeMs": total.time_ms,
        "bytes": total.bytes,
        "outputs": outputs,
    }


def _submodule(model: torch.nn.Module | None, address: str) -> torch.nn.Module | None:
    if model is None:
        return None
    try:
        return model.get_submodule(address)
    except AttributeError:  # a module the trace saw that the model no longer holds
        return None


def _parameters(
    log: ModelLog, address: str, module: torch.nn.Module | None
) -> list[protocol.ModuleParam]:
    """The module's parameters, nested ones included: all of them from the model, else those
    the trace saw an op read."""
    prefix = f"{address}." if address else ""
    if module is not None:
        return [
            {
                "name": prefix + name,
                "shape": list(p.shape),
                "numel": p.numel(),
                "trainable": p.requires_grad,
            }
            for name, p in module.named_parameters()
        ]
    return [
        {
            "name": n.label,
            "shape": list(n.shape or ()),
            "numel": _numel(n.shape or ()),
            "trainable": n.requires_grad,
        }
        for n in log.nodes
        if n.kind == "param" and n.label.startswith(prefix)
    ]


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count
