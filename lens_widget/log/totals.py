"""Per-module totals of the per-op metrics: FLOPs, parameters, bytes, time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lens_widget.log.records import NodeKind, OpRecord


@dataclass
class ModuleTotals:
    """What the ops inside one module (every pass, nested modules included) add up to.

    ``flops`` is None when no op inside has a FLOP formula; ``time_ms`` when none was timed.
    ``params`` counts each parameter the ops read once, however often it was read
    (buffers such as BatchNorm's running statistics are not parameters).
    """

    n_ops: int = 0
    flops: int | None = None
    params: int = 0
    bytes: int = 0
    time_ms: float | None = None
    _param_names: set[str] = field(default_factory=set, repr=False)

    def add(self, op: OpRecord, kind_of: Mapping[str, NodeKind]) -> None:
        self.n_ops += 1
        self.bytes += op.nbytes
        if op.flops is not None:
            self.flops = (self.flops or 0) + op.flops
        if op.time_ms is not None:
            self.time_ms = (self.time_ms or 0.0) + op.time_ms
        for use in op.params:
            if kind_of.get(use.name) == "param" and use.name not in self._param_names:
                self._param_names.add(use.name)
                self.params += use.numel


def module_totals(
    ops: Iterable[OpRecord], addresses: Iterable[str], kind_of: Mapping[str, NodeKind]
) -> dict[str, ModuleTotals]:
    """address -> totals, for the modules that ran (in the order given); "" is the model."""
    totals = {address: ModuleTotals() for address in addresses}
    for op in ops:
        inside = {address for address, _ in op.module_stack}
        inside.add("")  # the root module holds every op, also those outside any call
        for address in inside:
            if address in totals:
                totals[address].add(op, kind_of)
    return totals
