"""print(log): what a user wants to know at a glance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from lens_widget.log.records import ModuleInfo, OpRecord
from lens_widget.log.totals import ModuleTotals

_MAX_OPS_LISTED = 40
_MAX_MODULE_LINES = 40


def human_bytes(n: float) -> str:
    """A size in binary units, as the widget writes it (format.ts fmtBytes): "512 B",
    "32.0 KiB", "1.5 MiB"; the unit is chosen after rounding (1,048,575 B is "1.0 MiB")."""
    if not math.isfinite(n) or abs(n) < 1024:
        return f"{n:.0f} B" if math.isfinite(n) else f"{n} B"
    value, units = abs(n), ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    i = 0
    while i < len(units) - 1 and float(_decimals(value)) >= 1024:
        value /= 1024
        i += 1
    return f"{'-' if n < 0 else ''}{_decimals(value)} {units[i]}"


def _decimals(value: float) -> str:
    return f"{value:.0f}" if round(value, 1) >= 100 else f"{value:.1f}"


_SI = ("", "K", "M", "G", "T", "P")


def human_count(n: float) -> str:
    """1234 -> "1.2K", 5.6e9 -> "5.6G": whole numbers below a thousand, one decimal above, the
    unit chosen on the rounded text (999,960 is "1.0M", not "1000.0K")."""
    if not math.isfinite(n):
        return str(n)
    if float(f"{abs(n):.0f}") < 1000:
        return f"{n:.0f}"
    value, unit = abs(n) / 1000, 1
    while unit < len(_SI) - 1 and float(f"{value:.1f}") >= 1000:
        value /= 1000
        unit += 1
    if float(f"{value:.1f}") >= 1000:
        return f"{n:.2g}"  # past P
    return f"{'-' if n < 0 else ''}{value:.1f}{_SI[unit]}"


class Summarized(Protocol):
    """What the summary reads from a log (ModelLog has all of it)."""

    @property
    def model_class(self) -> str: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def failed_op(self) -> str | None: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def n_params(self) -> int: ...
    @property
    def param_bytes(self) -> int: ...
    @property
    def saved_bytes(self) -> int: ...
    @property
    def structure(self) -> str: ...
    @property
    def recurrent_layers(self) -> Sequence[str]: ...
    @property
    def modules(self) -> Mapping[str, ModuleInfo]: ...
    @property
    def ops(self) -> Sequence[OpRecord]: ...
    @property
    def inputs(self) -> Sequence[OpRecord]: ...
    @property
    def outputs(self) -> Sequence[OpRecord]: ...
    @property
    def flops(self) -> int | None: ...
    @property
    def module_totals(self) -> Mapping[str, ModuleTotals]: ...


def summarize(log: Summarized) -> str:
    ops = log.ops
    saved = [n for n in ops if n.saved]
    lines = [
        f"ModelLog of {log.model_class}"
        + (
            f"  [PARTIAL: forward raised {type(log.error).__name__}: {log.error}]"
            if log.error
            else ""
        ),
        f"  structure: {log.structure}{_recurrence(log)}; {len(log.modules)} modules ran; "
        f"{len(ops)} ops "
        f"({len({n.layer for n in ops})} distinct layers)",
        f"  inputs: {', '.join(f'{n.label} {_shape(n.shape)}' for n in log.inputs) or 'none'}",
        f"  outputs: {', '.join(f'{n.label} {_shape(n.shape)}' for n in log.outputs) or 'none'}",
        f"  saved: {len(saved)} of {len(ops)} op activations, {human_bytes(log.saved_bytes)}",
        f"  parameters: {log.n_params:,} ({human_bytes(log.param_bytes)})",
        f"  traced in {log.elapsed * 1000:.1f} ms",
        _flops_line(log),
    ]
    timed = [n.time_ms for n in ops if n.time_ms is not None]
    if timed:
        lines.append(f"  op time: {sum(timed):.2f} ms over {len(timed)} timed ops")
    if log.failed_op:
        lines.append(f"  failed op: {log.failed_op}")
    lines.append("Modules (address: class, passes, ops, FLOPs, params, time):")
    modules = list(log.modules.values())  # in the order they first ran
    totals = log.module_totals
    for info in modules[:_MAX_MODULE_LINES]:
        depth = _depth(log.modules, info.address)
        passes = f" x{info.n_passes}" if info.n_passes > 1 else ""
        name = info.address or "(root)"
        lines.append(
            f"  {'  ' * depth}{name}: {info.class_name}{passes}, {info.n_ops} ops"
            + _totals_text(totals.get(info.address))
        )
    if len(modules) > _MAX_MODULE_LINES:
        lines.append(f"  ... {len(modules) - _MAX_MODULE_LINES} more modules")
    lines.append("Ops (label: function -> shape  [module]):")
    shown = (
        ops
        if len(ops) <= _MAX_OPS_LISTED
        else [*ops[: _MAX_OPS_LISTED // 2], *ops[-_MAX_OPS_LISTED // 2 :]]
    )
    for i, node in enumerate(shown):
        if len(ops) > _MAX_OPS_LISTED and i == _MAX_OPS_LISTED // 2:
            lines.append(f"  ... {len(ops) - _MAX_OPS_LISTED} more ops ...")
        flag = "  <- raised" if node.failed else "  (nested, padded)" if node.nested_shapes else ""
        lines.append(f"  {node.label}: {node.func} -> {_shape(node.shape)}  [{node.module}]{flag}")
    return "\n".join(lines)


def _recurrence(log: Summarized) -> str:
    """What makes a recurrent log recurrent: " (gru_cell_1_4 reads its own earlier pass)"."""
    layers = log.recurrent_layers
    if not layers:
        return ""
    named = ", ".join(layers[:3]) + (f" and {len(layers) - 3} more" if len(layers) > 3 else "")
    verb = "reads its" if len(layers) == 1 else "read their"
    return f" ({named} {verb} own earlier pass)"


def _flops_line(log: Summarized) -> str:
    with_formula = sum(1 for n in log.ops if n.flops is not None)
    total = log.flops
    if total is None:
        return "  FLOPs: none counted (no op has a FLOP formula)"
    counted = f"{with_formula} of {len(log.ops)} ops have a FLOP formula"
    return f"  FLOPs: {human_count(total)} ({counted})"


def _totals_text(totals: ModuleTotals | None) -> str:
    if totals is None:
        return ""
    parts = [""]
    if totals.flops:
        parts.append(f"{human_count(totals.flops)} FLOPs")
    if totals.params:
        parts.append(f"{human_count(totals.params)} params")
    if totals.time_ms is not None:
        parts.append(f"{totals.time_ms:.2f} ms")
    return ", ".join(parts)


def _shape(shape: tuple[int, ...] | None) -> str:
    return str(tuple(shape)) if shape is not None else "-"


def _depth(modules: Mapping[str, ModuleInfo], address: str) -> int:
    """Nesting depth among the modules that ran (a ModuleList never runs: no level)."""
    depth, parent = 0, modules[address].parent
    while parent is not None:
        depth += 1
        parent = modules[parent].parent if parent in modules else None
    return depth
